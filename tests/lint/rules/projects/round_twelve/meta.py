import torch
from torch import nn


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_epoch(self, batches):
        total = torch.tensor(0.0)
        for x, y in batches:
            self.optimizer.zero_grad()
            loss = nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            total += loss  # error: PIT102
        return total / len(batches)
