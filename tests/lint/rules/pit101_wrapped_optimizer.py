# A schedule that wraps the optimizer (the Annotated Transformer's NoamOpt): zero_grad() on the
# wrapped optimizer clears what the wrapper steps; a loop that never clears is still found.
import torch


class NoamOpt:
    def __init__(self, optimizer, warmup):
        self.optimizer = optimizer
        self.warmup = warmup
        self._step = 0

    def step(self):
        self._step += 1
        for p in self.optimizer.param_groups:
            p["lr"] = self._step ** -0.5
        self.optimizer.step()


def train(model, iterator, optimizer, criterion):
    model.train()
    for src, trg in iterator:
        optimizer.optimizer.zero_grad()
        loss = criterion(model(src), trg)
        loss.backward()
        optimizer.step()


def train_forgetful(model, iterator, optimizer, criterion):
    model.train()
    for src, trg in iterator:
        loss = criterion(model(src), trg)
        loss.backward()
        optimizer.step()  # error: PIT101


model = torch.nn.Linear(4, 2)
opt = NoamOpt(torch.optim.Adam(model.parameters()), 400)
train(model, [], opt, torch.nn.CrossEntropyLoss())
train_forgetful(model, [], opt, torch.nn.CrossEntropyLoss())
