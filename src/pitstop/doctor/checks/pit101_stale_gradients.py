"""PIT101 stale-gradients."""

from __future__ import annotations

import weakref

import torch

from pitstop.doctor.check import Check
from pitstop.doctor.checks.common import and_more


class StaleGradients(Check):
    """PIT101: an optimizer step applies gradients that still hold the previous step's values.

    After each step its gradient tensors are remembered (weakly) with their version counters, and
    accumulations into them are counted. At the next step a cleared gradient is a new tensor
    (``zero_grad()`` sets None) or one changed in place beyond the accumulations (``zero_()``);
    the same tensor changed only by accumulations was never cleared. Several backwards per step
    with zero_grad after the step (intentional accumulation), and a GAN whose generator backward
    passes through the discriminator before its zero_grad, are not this."""

    code = "PIT101"

    def __init__(self) -> None:
        self.left: dict[int, tuple[weakref.ref[torch.Tensor], int]] = {}
        self.accumulated: dict[int, int] = {}

    def on_step_done(self, optimizer: torch.optim.Optimizer) -> None:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.left[id(p)] = (weakref.ref(p.grad), p.grad._version)
                    self.accumulated[id(p)] = 0

    def on_grad(self, param: torch.Tensor) -> None:
        if id(param) in self.accumulated:
            self.accumulated[id(param)] += 1

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        stale = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                entry = self.left.pop(id(p), None)
                added = self.accumulated.pop(id(p), 0)
                grad = p.grad
                if entry is not None and grad is not None and grad._version - entry[1] == added and entry[0]() is grad:
                    stale.append(self.name_of(p))
        if stale:
            self.found(self.code, self.session.optimizer_label(optimizer),
                       f"gradients of {and_more(stale)} still held the previous step's values at this "
                       f"step: no zero_grad() between two optimizer steps, so old gradients are applied again")
