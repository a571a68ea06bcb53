import torch.utils.checkpoint as cp
from torch.utils.checkpoint import checkpoint_sequential


def forward(blocks, x):
    x = cp.checkpoint(blocks[0], x)  # error: PIT301
    x = cp.checkpoint(blocks[1], x, use_reentrant=True)  # error: PIT301
    x = cp.checkpoint(blocks[2], x, use_reentrant=False)
    return checkpoint_sequential(blocks, 2, x)  # error: PIT301


def checkpoint(fn, x):  # a local function of the same name
    return fn(x)


def local(fn, x):
    return checkpoint(fn, x)
