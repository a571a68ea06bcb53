"""PIT109 wrong-module-mode."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pitstop.doctor.check import Check
from pitstop.doctor.checks.common import mode_dependent


class WrongModuleMode(Check):
    """PIT109: an optimizer step after a training forward in eval mode (dropout / batch-norm
    behave as at inference), or evaluation (the roots of ``on_evaluation``: forwards with
    autograd off next to real training, or at the end) run in train mode."""

    code = "PIT109"

    def __init__(self) -> None:
        self.eval_training: list[str] = []

    def on_root_forward(self, module: nn.Module, output: Any, grad_enabled: bool) -> None:
        if grad_enabled and not module.training and mode_dependent(module):
            self.eval_training.append(self.name_of(module))

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        for name in dict.fromkeys(self.eval_training):
            self.found(self.code, name, f"optimizer.step() after a training forward of `{name}` in eval mode: "
                       "its dropout / batch-norm layers behaved as at inference (call model.train())")
        self.eval_training = []

    def on_evaluation(self, roots: list[str]) -> None:
        for name in dict.fromkeys(roots):
            module = next((m for m in self.session.roots_alive() if self.name_of(m) == name), None)
            if module is not None and mode_dependent(module):
                self.found(self.code, f"{name} (evaluation)", f"`{name}` ran forwards with autograd off "
                           f"(evaluation) in train mode: dropout is active and batch-norm uses and updates batch "
                           f"statistics (call model.eval() before evaluating)",
                           fix="call model.eval() before evaluation and model.train() after it")
