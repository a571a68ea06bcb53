"""PIT104 training-without-grad; also tells the others which autograd-off forwards were evaluation."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pitstop.doctor.check import Check


class TrainingWithoutGrad(Check):
    """PIT104: a training step whose forward ran with autograd off. Autograd-off forwards next to
    real training (or left at the end) are evaluation: published as ``on_evaluation(roots)``."""

    code = "PIT104"
    codes = ("PIT104", "PIT109")  # kept when only PIT109 is selected: its evaluation events feed PIT109

    def __init__(self) -> None:
        self.nograd_train: list[str] = []  # roots forwarded in train mode with grad off this step
        self.backward_seen = False

    def on_root_forward(self, module: nn.Module, output: Any, grad_enabled: bool) -> None:
        if not grad_enabled and module.training:
            self.nograd_train.append(self.name_of(module))

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        self.backward_seen = True
        if any(isinstance(t, torch.Tensor) and not t.requires_grad for t in tensors):
            where = ("under torch.inference_mode()" if torch.is_inference_mode_enabled() else
                     "under torch.no_grad()" if not torch.is_grad_enabled() else "")
            cause = (f"the forward of `{self.nograd_train[-1]}` ran with autograd off" if self.nograd_train
                     else f"backward is called {where}" if where else "the tensor was computed with autograd off "
                     "(no_grad/inference_mode, .detach(), or every parameter frozen)")
            self.found(self.code, site or "backward", f"backward() on a tensor that does not require grad: {cause}")

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        has_grads = any(p.grad is not None for g in optimizer.param_groups for p in g["params"])
        if self.nograd_train and not self.backward_seen and not has_grads:
            self.found(self.code, self.nograd_train[-1],
                       f"the training forward of `{self.nograd_train[-1]}` ran under torch.no_grad() or "
                       f"torch.inference_mode() and optimizer.step() had no gradients: nothing was learned")
        evaluation = self.nograd_train if self.backward_seen or has_grads else []
        self.nograd_train, self.backward_seen = [], False
        if evaluation:  # forwards next to real training: evaluation
            self.session.emit("on_evaluation", evaluation)

    def on_finish(self) -> None:
        evaluation, self.nograd_train = self.nograd_train, []
        if evaluation:
            self.session.emit("on_evaluation", evaluation)
