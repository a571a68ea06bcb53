"""``InStep``: the seconds spent inside ``optimizer.step()``, from the optimizer step pre and post
hooks. Both workers time the optimizer's own phase with it (the API worker through one optimizer's
hooks, script mode through the global ones, every optimizer of a GAN together): where a
foreach/fused implementation acts, measured apart from the rest of the step's noise
(``train/winner.py`` judges it). On the CPU only: a CUDA step returns before its kernels ran."""

from __future__ import annotations

import time
from typing import Any


class InStep:
    """Seconds inside ``optimizer.step()`` since the last ``pop``: ``pre``/``post`` are the hooks
    (any signature: an optimizer's own hooks and the global ones pass different arguments)."""

    def __init__(self) -> None:
        self.total, self.since = 0.0, 0.0

    def pre(self, *_: Any) -> None:
        self.since = time.perf_counter()

    def post(self, *_: Any) -> None:
        if self.since:
            self.total += time.perf_counter() - self.since
            self.since = 0.0

    def pop(self) -> float:
        total, self.total = self.total, 0.0
        return total
