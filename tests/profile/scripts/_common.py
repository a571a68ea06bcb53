"""Shared by the planted scripts: a small MLP training step in bf16 autocast (this is the clean
base: nothing to fix but the compute), one thread, and --steps N from the command line."""

import sys

import torch
from torch import nn


def steps() -> int:
    """--steps N from the script's own arguments (read at each run: the module stays imported)."""
    return int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 14


def setup(threads: int = 1, width: int = 512):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def batch(n: int = 128):
    return torch.randn(n, 256), torch.randint(0, 10, (n,))


def forward(model, x, y, autocast: bool = True, reduction: str = "mean"):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out = model(x)
    return nn.functional.cross_entropy(out.float(), y, reduction=reduction)
