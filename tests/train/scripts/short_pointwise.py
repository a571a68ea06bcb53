"""A short plain PyTorch loop (30 steps by default) whose step is a chain of 160 small pointwise ops
on a batch of 32 x 64: eager pays a dispatch (and an autograd node) per op, a compiled graph fuses
them into a few kernels, so ``model.compile()`` makes each step several times faster (about 0.5 ms
against a few ms on the 2-core dev machine); but compiling costs about 10 s, which 30 steps never
earn back. ``pitstop train`` must leave it uncompiled."""

import argparse

import torch
from torch import nn


class Pointwise(nn.Module):
    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(depth, width))
        self.shift = nn.Parameter(torch.zeros(depth, width))
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for scale, shift in zip(self.scale, self.shift, strict=True):
            x = x + 0.1 * torch.relu(x * scale + shift)
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=30)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Pointwise(64, 32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.randn(2048, 64)
    labels = data[:, :10].argmax(dim=1)
    for step in range(args.iters):
        i = step * 32 % 2048
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data[i:i + 32]), labels[i:i + 32])
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
