"""planted: page-faults. Each step writes a 64 MiB scratch buffer and frees it: over the largest mmap
threshold glibc's malloc ever uses, so it is mapped afresh and unmapped every step (a minor page
fault for each of its 16,384 pages of 4 KiB)."""
import torch
from _common import batch, forward, setup, steps

model, opt = setup()
for _ in range(steps()):
    x, y = batch()
    scratch = torch.empty(16 * 1024 * 1024).fill_(1.0)  # 64 MiB the step writes, then frees
    loss = forward(model, x, y) + scratch[0] * 0
    opt.zero_grad()
    loss.backward()
    opt.step()
    del scratch
