"""planted: zero-grad-in-place. Gradients zeroed in place, then added to."""
from _common import batch, forward, setup, steps

model, opt = setup()
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad(set_to_none=False)
    forward(model, x, y).backward()
    opt.step()
