import torch
from torch import nn

from meta import Trainer
from utils import run_epoch


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x, h):
        h = torch.tanh(self.lin(torch.cat([x, h], 1)))
        return h, h


model = Cell()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(8, 4), torch.randn(8, 4)) for _ in range(4)]
h = torch.zeros(8, 4)
for epoch in range(3):
    total, h = run_epoch(batches, model, optimizer, h)  # error: PIT103
Trainer(nn.Linear(4, 4)).train_epoch(batches)
state = torch.randn(4)
with torch.no_grad():  # error: PIT202
    print(model(state.unsqueeze_(0), torch.zeros(1, 4)))  # in place on a local tensor, not a weight
