"""planted: debug-mode. Anomaly detection left on."""
import torch
from _common import batch, forward, setup, steps

torch.autograd.set_detect_anomaly(True)
model, opt = setup()
for _ in range(steps()):
    x, y = batch()
    opt.zero_grad()
    forward(model, x, y).backward()
    opt.step()
