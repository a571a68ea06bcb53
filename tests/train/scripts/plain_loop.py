"""A plain PyTorch training loop, as a user writes one: argparse options, two parameter groups
(decay / no decay), the loss computed in the loop, the model built in main()."""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 8))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                                  lr=args.lr)
    data = torch.randn(1024, 64)
    labels = data[:, :8].argmax(dim=1)
    for step in range(args.iters):
        i = step * 32 % 1024
        optimizer.zero_grad()
        logits = model(data[i:i + 32])
        loss = nn.functional.cross_entropy(logits, labels[i:i + 32])
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
