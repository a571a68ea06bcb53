"""planted: compute-fp32, needs bf16. Forward and backward in float32 on hardware with native bfloat16."""
from _common import batch, forward, setup, steps

model, opt = setup(width=1024)
for _ in range(steps()):
    x, y = batch(256)
    opt.zero_grad()
    forward(model, x, y, autocast=False).backward()
    opt.step()
