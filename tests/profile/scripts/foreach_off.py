"""planted: optimizer-bound. Adam's for-loop over 400 small parameters (a bank of embeddings)."""
import torch
from _common import steps
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)
bank = nn.ParameterList([nn.Parameter(torch.randn(16) * 0.1) for _ in range(400)])
head = nn.Linear(16, 1)
opt = torch.optim.Adam([*bank, *head.parameters()], lr=1e-3, foreach=False)
for _ in range(steps()):
    opt.zero_grad()
    x = torch.stack(list(bank))  # (400, 16)
    head(x).pow(2).mean().backward()
    opt.step()
