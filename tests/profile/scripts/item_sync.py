"""planted: sync-bound, needs cuda. Per-sample losses read with .item() every step (a per-sample metric;
on a CPU an .item() costs microseconds: the line is found, and no verdict is the right answer)."""
from _common import batch, forward, setup, steps

model, opt = setup()
worst = []
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad()
    losses = forward(model, x, y, reduction="none")
    worst.append(max(v.item() for v in losses))  # 128 syncs per step
    losses.mean().backward()
    opt.step()
