import torch


def score(logits, labels):
    return (torch.sigmoid(logits) * labels).sum(1)  # soft scores: the logits' graph comes with them
