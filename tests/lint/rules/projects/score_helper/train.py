import torch
from torch import nn

from metrics import score


def train(model, loader, epochs):
    opt = torch.optim.Adam(model.parameters())
    for _ in range(epochs):
        train_score = 0
        for x, y in loader:
            out = model(x)
            loss = nn.functional.binary_cross_entropy_with_logits(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            train_score += score(out, y.data).sum()  # error: PIT102
        print(train_score / len(loader.dataset))
