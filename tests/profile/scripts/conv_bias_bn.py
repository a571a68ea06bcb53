"""planted: conv-bias-before-bn. Convs with a bias feeding BatchNorm directly."""
import torch
from _common import steps
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(steps()):
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    nn.functional.cross_entropy(out.float(), y).backward()
    opt.step()
