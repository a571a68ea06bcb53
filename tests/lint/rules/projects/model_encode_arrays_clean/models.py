"""The twin: the method's no_grad output stays a tensor (a frozen part that training may call)."""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)

    def encode(self, batches):
        out = []
        for x in batches:
            with torch.no_grad():
                emb = self.forward(x)
            out.append(emb)
        return torch.cat(out)
