"""planted: debug-mode. The whole loop runs under the autograd profiler (left in from debugging)."""
import torch
from _common import batch, forward, setup, steps

model, opt = setup()
with torch.autograd.profiler.profile(record_shapes=True):
    for _ in range(steps()):
        x, y = batch()
        opt.zero_grad()
        forward(model, x, y).backward()
        opt.step()
