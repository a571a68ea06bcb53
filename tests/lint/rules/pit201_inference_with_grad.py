import torch


def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).sum().item()  # error: PIT201
    return correct


@torch.inference_mode()
def predict(model, x):
    model.eval()
    return model(x)


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return [model(x) for x, _ in loader]


def train(model, loader, val_loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
    model.eval()
    for x, y in val_loader:
        print(crit(model(x), y))  # error: PIT201
    model.train()
