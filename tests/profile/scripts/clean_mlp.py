"""clean: an MLP in bf16 autocast, set_to_none zero_grad, one thread."""
from _common import batch, forward, setup, steps

model, opt = setup()
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad()
    forward(model, x, y).backward()
    opt.step()
