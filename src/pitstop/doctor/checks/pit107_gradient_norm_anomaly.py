"""PIT107 gradient-norm-anomaly."""

from __future__ import annotations

import math
import statistics
from collections import deque

import torch

from pitstop.doctor.check import Check


class GradNormAnomaly(Check):
    """PIT107: the total gradient norm spikes far above its running median, or vanishes for
    several steps; layers whose norm jumped most are named."""

    code = "PIT107"
    WARMUP, WINDOW, SPIKE, FLOOR, VANISH_STEPS = 10, 50, 10.0, 1e-8, 5

    def __init__(self) -> None:
        self.history: deque[float] = deque(maxlen=self.WINDOW)
        self.layer_ema: dict[int, float] = {}
        self.tiny = 0

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        finite = [n for n in norms if math.isfinite(n)]
        if len(finite) < len(norms):
            return  # non-finite: PIT106's business
        total = math.sqrt(sum(n * n for n in finite))
        label = self.session.optimizer_label(optimizer)
        if len(self.history) >= self.WARMUP:
            median = statistics.median(self.history)
            if median > 0 and total > self.SPIKE * median:
                jumps = sorted(((n / max(self.layer_ema.get(id(p), n), 1e-30), self.name_of(p))
                                for p, n in zip(params, norms, strict=True)), reverse=True)[:3]
                layers = ", ".join(f"`{name}` {ratio:.0f}x" for ratio, name in jumps)
                self.found(self.code, label, f"gradient norm {total:.3g} at step {step} is "
                           f"{total / median:.0f}x its running median {median:.3g} (largest jumps: {layers})",
                           step=step)
        self.tiny = self.tiny + 1 if total < self.FLOOR else 0
        if self.tiny == self.VANISH_STEPS:
            self.found(self.code, f"{label} (vanishing)", f"gradient norm below {self.FLOOR:g} for "
                       f"{self.VANISH_STEPS} steps in a row (step {step}: {total:.2g}): gradients vanish",
                       step=step, fix="check initialisation, normalisation layers, saturating activations "
                       "and the loss scale; a learning-rate or clipping change will not help")
        self.history.append(total)
        for p, n in zip(params, norms, strict=True):
            prev = self.layer_ema.get(id(p))
            self.layer_ema[id(p)] = n if prev is None else 0.9 * prev + 0.1 * n
