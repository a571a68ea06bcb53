import torch
from metrics import *


def train(model, loader, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    criterion = torch.nn.BCEWithLogitsLoss()
    for epoch in range(epochs):
        acc, f1 = 0.0, 0.0
        for images, masks in loader:
            optimizer.zero_grad()
            out = model(images)
            loss = criterion(out, masks)
            loss.backward()
            optimizer.step()
            acc += get_accuracy(out, masks)
            f1 += get_f1(out, masks)
        print(epoch, acc, f1)
