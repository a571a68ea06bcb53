"""PIT107 gradient-norm-anomaly."""

from __future__ import annotations

import math
import statistics
from collections import deque

import torch

from pitstop.doctor.check import Check


class GradNormAnomaly(Check):
    """PIT107, per optimizer (a GAN's two, or one per layer, each against its own history): the
    total gradient norm grows at least ``GROWTH``-fold at each of ``GROWING`` steps in a row (an
    explosion under way, from the first steps on, before anything is non-finite); spikes far above
    its running median and its median over the last ``RECENT`` steps (after ``WARMUP`` steps: a
norm that rises as training goes on, as a REINFORCE loss summed over lengthening episodes does,
is no spike); or vanishes for several steps. The layers whose
    norm jumped most are named."""

    code = "PIT107"
    WARMUP, WINDOW, SPIKE, FLOOR, VANISH_STEPS = 10, 50, 10.0, 1e-8, 5
    RECENT = 10  # a spike is also far above the last steps: a trend (RL episodes lengthening) is not one
    GROWTH, GROWING = 10.0, 3  # 1000x over three steps: no healthy run starts like that

    def __init__(self) -> None:
        self.history: dict[int, deque[float]] = {}  # optimizer id -> its recent total norms
        self.growing: dict[int, int] = {}  # optimizer id -> steps in a row of GROWTH-fold growth
        self.tiny: dict[int, int] = {}
        self.layer_ema: dict[int, float] = {}

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        if not all(math.isfinite(n) for n in norms):
            return  # non-finite: PIT106's business
        total = math.sqrt(sum(n * n for n in norms))
        key, label = id(optimizer), self.session.optimizer_label(optimizer)
        history = self.history.setdefault(key, deque(maxlen=self.WINDOW))
        previous = history[-1] if history else None
        grew = previous is not None and previous > 0 and total >= self.GROWTH * previous
        self.growing[key] = self.growing.get(key, 0) + 1 if grew else 0
        if self.growing[key] == self.GROWING:
            first = history[-self.GROWING] if len(history) >= self.GROWING else previous
            self.found(self.code, label, f"gradient norm is exploding: {total:.3g} at step {step}, up "
                       f"{total / max(first or total, 1e-30):.3g}x in {self.GROWING} steps (at least "
                       f"{self.GROWTH:g}x each; largest jumps: {self._jumps(params, norms)})", step=step)
        elif len(history) >= self.WARMUP:
            median = max(statistics.median(history), statistics.median(list(history)[-self.RECENT:]))
            if median > 0 and total > self.SPIKE * median:
                self.found(self.code, label, f"gradient norm {total:.3g} at step {step} is {total / median:.0f}x "
                           f"its running median {median:.3g} (largest jumps: {self._jumps(params, norms)})",
                           step=step)
        self._vanishing(key, label, step, total)
        history.append(total)
        for p, n in zip(params, norms, strict=True):
            prev = self.layer_ema.get(id(p))
            self.layer_ema[id(p)] = n if prev is None else 0.9 * prev + 0.1 * n

    def _jumps(self, params: list[torch.Tensor], norms: list[float]) -> str:
        """The three layers whose norm rose most against their own running average."""
        jumps = sorted(((n / max(self.layer_ema.get(id(p), n), 1e-30), self.name_of(p))
                        for p, n in zip(params, norms, strict=True)), reverse=True)[:3]
        return ", ".join(f"`{name}` {ratio:.3g}x" for ratio, name in jumps)

    def _vanishing(self, key: int, label: str, step: int, total: float) -> None:
        self.tiny[key] = self.tiny.get(key, 0) + 1 if total < self.FLOOR else 0
        if self.tiny[key] == self.VANISH_STEPS:
            self.found(self.code, f"{label} (vanishing)", f"gradient norm below {self.FLOOR:g} for "
                       f"{self.VANISH_STEPS} steps in a row (step {step}: {total:.2g}): gradients vanish",
                       step=step, fix="check initialisation, normalisation layers, saturating activations "
                       "and the loss scale; a learning-rate or clipping change will not help")
