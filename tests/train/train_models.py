"""Small real models for the train tests (importable by worker processes as a file spec)."""

import torch
from torch import nn


def mlp():
    """A tiny classifier with batch-norm and dropout."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4))


def cnn():
    """A tiny CNN with batch-norm: bf16 bends its batch-norm gradients, training goes the same way."""
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))


def problem():
    """A factory returning (model, inputs, target, loss_fn, optimizer_factory)."""
    torch.manual_seed(0)
    model = mlp()
    inputs = (torch.randn(16, 16),)
    target = torch.randint(0, 4, (16,))
    return model, inputs, target, nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)
