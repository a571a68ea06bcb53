"""PIT402 input-stall."""

from __future__ import annotations

import time

from pitstop.doctor.check import Check


class InputStall(Check):
    """PIT402: the share of step time spent waiting for the DataLoader (first two steps excluded:
    workers start up), warned about at >= 20%. ``share()`` is the median of the steps' shares (None
    when too few steps were seen; the report shows it): one fetch the OS preempted on a busy machine
    made a clean loop of sub-millisecond steps look 44% input-bound as a sum of waits over a sum of
    steps, while a loop that waits for its data waits at every step."""

    code = "PIT402"
    SKIP, MIN_STEPS, SHARE = 2, 3, 0.2

    def __init__(self) -> None:
        self.wait = 0.0
        self.batches = 0
        self.last: float | None = None
        self.waits: list[float] = []
        self.spans: list[float] = []

    def on_data(self, wait_s: float) -> None:
        self.wait += wait_s
        self.batches += 1

    def on_iteration(self, step: int) -> None:
        now = time.perf_counter()
        if self.last is not None and step > self.SKIP:
            self.waits.append(self.wait)
            self.spans.append(now - self.last)
        self.last, self.wait = now, 0.0

    def share(self) -> float | None:
        if not self.batches or len(self.spans) < self.MIN_STEPS or sum(self.spans) <= 0:
            return None
        import statistics

        return statistics.median(w / s for w, s in zip(self.waits, self.spans, strict=True) if s > 0)

    def on_finish(self) -> None:
        share = self.share()
        if share is not None and share >= self.SHARE:
            self.found(self.code, "DataLoader", f"{share:.0%} of each step was spent waiting for the next "
                       f"batch (over {len(self.spans)} steps, measured): the model sits idle", step=self.SKIP + 1)
