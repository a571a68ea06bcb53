import torch

from evaluation import evaluate


def fit(model, loader, val_loader, opt, crit, epochs):
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            crit(model(x), y).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            print(evaluate(model, val_loader))
