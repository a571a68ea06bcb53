import numpy as np
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self, p_dropout=0.1):
        super().__init__()
        self.drop = nn.Dropout(p_dropout)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(self.drop(x))


def accuracy(out, y):
    return float((out.argmax(1) == y).float().mean())


def eval_metrics(metrics, out, y):
    acc = np.zeros(len(metrics))
    for i, metric in enumerate(metrics):
        acc[i] += metric(out, y)  # a number into a numpy array: the array stays numpy
    return acc


def eval_losses(out, y):
    losses = torch.zeros(1)
    losses[0] += torch.nn.functional.cross_entropy(out, y)  # a tensor: its graph comes back
    return losses


def load_model(path):
    model = Tagger()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model


def valid_accuracy(path, batches):
    net = eval("Tagger(p_dropout=0)")
    net.load_state_dict(torch.load(path, weights_only=True))
    net.eval()
    with torch.inference_mode():
        return sum(accuracy(net(x), y) for x, y in batches) / len(batches)
