import numpy as np
import torch
from torch import nn


class Experiment:
    def __init__(self):
        self.model = nn.Linear(8, 1)
        self.optimizer = torch.optim.Adam(self.model.parameters())

    def train(self, batches):
        self.model.train()
        for x, y in batches:
            self.optimizer.zero_grad()
            nn.functional.mse_loss(self.model(x), y).backward()
            self.optimizer.step()

    def test(self, batches):
        self.model.eval()
        preds = []
        with torch.no_grad():  # error: PIT202
            for x, _ in batches:
                preds.append(self.model(x).cpu().numpy())
        np.save("preds.npy", np.concatenate(preds))
