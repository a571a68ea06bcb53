"""PIT108 dead-activations."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pitstop.doctor.check import Check


class DeadActivations(Check):
    """PIT108: a ReLU-family module that outputs zero for >= 99% of elements over many sampled
    training steps (every step for the first 10, then every 10th; one count_nonzero each)."""

    code = "PIT108"
    KINDS = (nn.ReLU, nn.ReLU6, nn.Hardtanh, nn.Threshold)
    MIN_SAMPLES, DEAD = 10, 0.99

    def __init__(self) -> None:
        self.pending: dict[int, list[torch.Tensor]] = {}
        self.zero: dict[int, list[float]] = {}
        self.names: dict[int, str] = {}  # names, not modules: the model may be gone at the end

    def on_module_forward(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        if not isinstance(module, self.KINDS) or not torch.is_grad_enabled() or not module.training:
            return
        step = self.session.step
        if step > 10 and step % 10:
            return
        if isinstance(output, torch.Tensor) and output.numel():
            if id(module) not in self.names:
                self.names[id(module)] = self.name_of(module)
            self.pending.setdefault(id(module), []).append(1.0 - torch.count_nonzero(output) / output.numel())

    def on_sync(self) -> None:
        for key, values in self.pending.items():
            self.zero.setdefault(key, []).extend(torch.stack(values).cpu().tolist())
        self.pending = {}

    def on_finish(self) -> None:
        self.on_sync()
        for key, zeros in self.zero.items():
            if len(zeros) < self.MIN_SAMPLES:
                continue
            share = sum(zeros) / len(zeros)
            if share >= self.DEAD:
                name = self.names[key]
                self.found(self.code, name, f"`{name}` output zero for {share:.1%} of elements over "
                           f"{len(zeros)} sampled training steps: its units are dead and never learn", step=1)
