import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.5), nn.Linear(256, 10))
opt = torch.optim.Adam(net.parameters())
crit = nn.CrossEntropyLoss()


def test(loader):
    net.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (net(x).argmax(1) == y).sum().item()
    return correct


def fit(train_loader, test_loader, epochs):
    for _ in range(epochs):
        net.train()
        for x, y in train_loader:
            opt.zero_grad()
            crit(net(x), y).backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            hits = 0
            for x, y in test_loader:
                hits += (net(x).argmax(1) == y).sum().item()
        print(hits, test(test_loader))


class Generator(nn.Module):
    """A model's own generate(): the caller decides its mode (no caller here: nothing to say)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))

    def generate(self, x):
        return self.net(x)
