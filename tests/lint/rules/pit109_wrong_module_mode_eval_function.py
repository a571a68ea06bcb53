import torch


def evaluate(model, loader):  # error: PIT109
    with torch.no_grad():  # info: PIT202
        return [model(x).argmax(-1) for x, _ in loader]
