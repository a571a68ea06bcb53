"""PIT202 in a training script: a feature-extraction function called once from the entry point
(not in the loop that trains) runs pure inference under no_grad; the same kind of function called
inside the training loop is part of it and left alone."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def inference(loader, encoder):
    features = []
    for x, _ in loader:
        with torch.no_grad():  # info: PIT202
            h = encoder(x)
        features.extend(h.cpu().numpy())
    return np.array(features)


def probe(encoder, x):
    with torch.no_grad():
        return encoder(x).argmax(1).tolist()


if __name__ == "__main__":
    encoder = nn.Linear(8, 4)
    head = nn.Linear(4, 2)
    loader = [(torch.randn(2, 8), torch.zeros(2, dtype=torch.long))]
    train_x = torch.from_numpy(inference(loader, encoder))
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    for step in range(10):
        optimizer.zero_grad()
        loss = F.cross_entropy(head(train_x), torch.zeros(len(train_x), dtype=torch.long))
        loss.backward()
        optimizer.step()
        print(probe(encoder, torch.randn(2, 8)))
