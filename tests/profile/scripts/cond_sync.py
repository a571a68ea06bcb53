"""planted: sync-bound. Data-dependent control flow: a tensor as the condition, per sample."""
from _common import batch, forward, setup, steps

model, opt = setup()
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad()
    losses = forward(model, x, y, reduction="none")
    hard = 0
    for v in losses:
        if v > 2.3:  # each comparison's truth value waits for the value
            hard += 1
    losses.mean().backward()
    opt.step()
