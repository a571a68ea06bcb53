import torch
from torch import load as tload


def restore(path, model):
    a = torch.load(path)  # error: PIT501
    b = tload(path, map_location="cpu")  # error: PIT501
    c = torch.load(path, weights_only=False)  # error: PIT501
    d = torch.load(path, weights_only=True)
    e = load(path)
    return a, b, c, d, e


def load(path):
    return path
