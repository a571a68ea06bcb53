import torch
import torch.nn as nn

from engine import one_epoch


def fit(crit, optimizer, train_loader, val_loader, epochs):
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    for _ in range(epochs):
        model.train()
        one_epoch(model, crit, train_loader, optimizer)
        model.eval()
        with torch.inference_mode():
            print(one_epoch(model, crit, val_loader))


def refine(model, crit, optimizer, valid_mask):
    # a mask named "valid" is not a validation loader: this is a training call
    return one_epoch(model, crit, valid_mask, optimizer)
