"""How much of each training step waits for data: the loader's ``next()`` time over the step."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass
class StallReport:
    """The measured share of step time spent waiting for the next batch."""

    share: float
    wait_ms: float  # median per step
    step_ms: float  # median per step, waiting included
    steps: int

    @property
    def recommendation(self) -> str:
        if self.share >= 0.2:
            return (f"{self.share:.0%} of each step waits for data: add DataLoader workers (num_workers, "
                    f"persistent_workers, prefetch_factor); `pitstop data` measures which settings help")
        if self.share >= 0.05:
            return f"{self.share:.0%} of each step waits for data: a few workers may help"
        return f"only {self.share:.0%} of each step waits for data: the input pipeline is not the bottleneck"

    def __str__(self) -> str:
        return (f"waiting for data: {self.wait_ms:.1f} ms of a {self.step_ms:.1f} ms step (median over {self.steps} "
                f"steps, share {self.share:.0%}); {self.recommendation}")


def stall_share(loader: Iterable[Any], step: Callable[[Any], Any], *, steps: int = 20, skip: int = 2) -> StallReport:
    """Run ``step(batch)`` on ``steps`` batches of ``loader`` (after ``skip`` warm-up steps, when
    workers start) and measure the share of each step spent in ``next()``. The doctor's PIT402 is
    the same measurement inside a real run."""
    waits, totals = [], []
    it = iter(loader)
    for i in range(steps + skip):
        start = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        got = time.perf_counter()
        step(batch)
        end = time.perf_counter()
        if i >= skip:
            waits.append(got - start)
            totals.append(end - start)
    if not totals:
        raise ValueError(f"the loader gave fewer than {skip + 1} batches")
    total = sum(totals)
    waits_sorted, totals_sorted = sorted(waits), sorted(totals)
    return StallReport(sum(waits) / total if total > 0 else 0.0, waits_sorted[len(waits) // 2] * 1e3,
                       totals_sorted[len(totals) // 2] * 1e3, len(totals))
