"""Round nineteen's shape: a model whose forward generates only out of training mode (``if
self.training: ... else: return self.generate(x)``, MusicTransformer's); training calls the forward
after train(), which never reaches generate(): nothing runs generate() in training mode."""
import torch
from torch import nn


class Composer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, length=None):
        if self.training or length is None:
            return self.fc(self.drop(x))
        return self.generate(x, length)

    def generate(self, prior, length):
        return self.fc(self.drop(prior)).argmax(-1)[:, :length]

    def sample(self, prior, length):
        return self.generate(prior, length)


class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.fc(self.drop(x))

    def generate(self, prior, length):  # warning: PIT109
        return self.fc(self.drop(prior)).argmax(-1)[:, :length]


def train(loader, steps):
    model = Composer()
    sampler = Sampler()
    params = [*model.parameters(), *sampler.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.1)
    for x, y in loader:
        model.train()
        sampler.train()
        loss = (model.forward(x) - y).pow(2).mean() + (sampler(x) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            sampler.generate(x, steps)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    return [model(x).argmax(-1) for x, _ in loader]


def train_with_copies(loader, val_loader, epochs):
    model = Sampler()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for _ in range(epochs):
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        eval_model = Sampler()  # a copy for evaluation (YOLOv4's): its eval() leaves `model` training
        eval_model.load_state_dict(model.state_dict())
        evaluate(eval_model, val_loader)


def train_switching(loader, val_loader, epochs):
    model = Sampler()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for _ in range(epochs):
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        evaluate(model, val_loader)  # error: PIT109
