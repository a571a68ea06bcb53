"""planted: threads-oversubscribed. Four times as many torch threads as physical cores."""
import os

from _common import batch, forward, setup, steps

model, opt = setup(threads=4 * (os.cpu_count() or 1))
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad()
    forward(model, x, y).backward()
    opt.step()
