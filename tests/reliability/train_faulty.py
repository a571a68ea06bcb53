"""Small real models that misbehave in training on purpose, loaded through file specs
(``tests/reliability/train_faulty.py:NAME``) by the reliability tests of ``pitstop train`` and by
benchmarks/fault_injection.py. Each misbehaves in a worker process only: pitstop's own process
never runs them."""

import os
import sys
import time

import torch
from torch import nn


class _Counting(nn.Module):
    """An 8 -> 4 classifier that does ``how`` on a training forward (``at``: the n-th one, 0 = every)."""

    def __init__(self, how: str, at: int = 0) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.how, self.at, self.calls = how, at, 0
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        out = self.net(x)
        if not self.training:
            return out
        self.calls += 1
        if self.at and self.calls != self.at and not (self.how == "nan" and self.calls > self.at):
            return out
        if self.how == "exit":
            os._exit(7)
        if self.how == "sys-exit":
            sys.exit(5)
        if self.how == "raise":
            raise RuntimeError(f"training forward {self.calls} failed on purpose")
        if self.how == "nan":
            return out * float("nan")
        if self.how == "hang-backward":
            return _HangInBackward.apply(out)
        return out


class _HangInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(3600)
        return grad


def exits_in_training_forward():
    return _Counting("exit")


def sys_exit_in_forward():
    return _Counting("sys-exit")


def hangs_in_backward():
    return _Counting("hang-backward")


def raises_on_third_training_forward():
    """Fine for the inspection (two reference steps), then the third training forward of any process fails."""
    return _Counting("raise", at=3)


def nan_from_third_step():
    """The loss turns NaN from the third training step on (in every process)."""
    return _Counting("nan", at=3)


def first_forward_raises():
    class Broken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Linear(8, 4)

        def forward(self, x):
            raise ValueError("this model never runs")

    return Broken()


def no_parameters():
    return nn.Sequential(nn.ReLU(), nn.Softmax(dim=-1))


def frozen():
    model = nn.Sequential(nn.Linear(8, 4))
    for p in model.parameters():
        p.requires_grad_(False)
    return model


class _HangsInOneVariant(nn.Module):
    """Trains normally except in the worker of the ``zero-grad-zeros`` variant (pitstop names each
    worker's variant in PITSTOP_VARIANT), whose training forwards sleep for an hour."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        if self.training and os.environ.get("PITSTOP_VARIANT") == "zero-grad-zeros":
            time.sleep(3600)
        return self.net(x)


def hangs_in_one_variant():
    return _HangsInOneVariant()
