"""planted: sync-bound. The indices of the firing hidden units read to the host every step (.nonzero().tolist())."""
from _common import batch, forward, setup, steps

model, opt = setup()
fired = []
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad()
    hidden = model[1](model[0](x))  # (128, 512)
    fired.append(len(hidden.nonzero().tolist()))  # logging which units fire
    forward(model, x, y).backward()
    opt.step()
