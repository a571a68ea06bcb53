"""A model's own method in a project that trains, in a file that does not: no_grad around a forward
whose every result becomes an array (InferSent's ``encode()``) is inference, whoever calls it."""
import numpy as np
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
            with torch.no_grad():  # info: PIT202
                emb = self.forward(x).data.cpu().numpy()
            out.append(emb)
        return np.vstack(out)
