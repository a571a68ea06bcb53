"""planted: sync-bound. A tensor printed every step (debug output left in)."""
from _common import batch, forward, setup, steps

model, opt = setup()
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad()
    out = model(x)
    print("logits", out[:64])
    forward(model, x, y).backward()
    opt.step()
