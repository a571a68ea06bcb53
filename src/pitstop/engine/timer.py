"""Timing a callable: warm-up until timings settle, then chunks of timed calls.

The clock is injected (``clock()`` returns seconds) so the rules are testable with a fake one.
The stopping rules are pure functions of the samples."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pitstop.errors import SettingError
from pitstop.stats import Groups, replica_spread, summarize

Clock = Callable[[], float]


@dataclass(frozen=True)
class TimingPolicy:
    """How long and how precisely to measure each variant."""

    target: float = 0.02  # stop when the median's 95% interval is within +-2%
    budget_s: float = 5.0  # timed seconds per variant at most (warm-up not included)
    min_samples: int = 10
    round_s: float = 0.05  # timed seconds per variant per interleaved round
    max_chunk: int = 1000  # calls per round at most (very fast models)
    min_rounds: int = 1  # interleaved rounds before precision may end a stage: a turn's samples share
    # one moment's load, so one long turn's tight interval says nothing of the next turn's
    switch_in: int = 0  # calls at the start of a turn of 2 or more that run but are not samples: the
    # process was just switched in after another variant's (its caches, its idle threads)
    warmup_min_calls: int = 3
    warmup_window: int = 5  # settle: the medians of two consecutive windows agree...
    warmup_tol: float = 0.05  # ...within 5%
    warmup_max_s: float | None = None  # default: 20% of budget_s, at least 0.5 s
    clock: str = "wall"  # wall: perf_counter; cpu: the process's CPU time per call (a busy machine, one thread)

    def __post_init__(self) -> None:
        if not 0 < self.target < 1:
            raise SettingError("target", f"precision must be in (0, 1), got {self.target}")
        if self.budget_s <= 0:
            raise SettingError("budget_s", f"must be positive, got {self.budget_s}")
        if self.min_samples < 1:
            raise SettingError("min_samples", f"must be at least 1, got {self.min_samples}")

    @property
    def warmup_limit_s(self) -> float:
        """Warm-up time cap."""
        return self.warmup_max_s if self.warmup_max_s is not None else max(0.5, 0.2 * self.budget_s)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (crosses process boundaries and goes into JSON)."""
        return asdict(self)


def settled(times: Sequence[float], window: int, tol: float) -> bool:
    """True when the medians of the last two windows of calls agree within ``tol``."""
    if len(times) < 2 * window:
        return False
    last = float(np.median(times[-window:]))
    prev = float(np.median(times[-2 * window : -window]))
    return prev > 0 and abs(last - prev) / prev <= tol


def precision(groups: Groups) -> float:
    """Cheap relative half-width of the median's interval: the pooled order-statistic interval,
    or the spread between replicas' medians when that is wider (more calls cannot fix it)."""
    pooled = [t for g in groups for t in g]
    return max(summarize(pooled).rel_halfwidth, replica_spread(groups)) if pooled else float("inf")


def precise_enough(groups: Groups, policy: TimingPolicy) -> bool:
    """True when there are enough samples and the median's interval meets the target."""
    return sum(map(len, groups)) >= policy.min_samples and precision(groups) <= policy.target


def chunk_size(per_call_s: float, policy: TimingPolicy, share: int = 1) -> int:
    """Calls per turn, so that a round of one variant (its ``share`` replicas) lasts about ``round_s``."""
    if per_call_s <= 0:
        return policy.max_chunk
    return int(min(policy.max_chunk, max(1, round(policy.round_s / share / per_call_s))))


@dataclass(frozen=True)
class Warmup:
    """What warm-up did: calls, seconds, the first call's time and whether timings settled."""

    calls: int
    seconds: float
    first_call_s: float
    settled: bool
    per_call_s: float  # median of the last window: the estimate used to size chunks


class CallTimer:
    """Times calls of ``fn``; ``sync`` (e.g. ``torch.cuda.synchronize``) runs before reading the clock."""

    def __init__(self, fn: Callable[[], Any], clock: Clock = time.perf_counter,
                 sync: Callable[[], None] | None = None) -> None:
        self.fn, self.clock, self.sync = fn, clock, sync or (lambda: None)

    def once(self) -> float:
        """Seconds for one call (its output is dropped inside the timed region, as in a loop)."""
        self.sync()
        start = self.clock()
        out = self.fn()
        del out
        self.sync()
        return self.clock() - start

    def times(self, n: int) -> list[float]:
        """Seconds for each of ``n`` calls."""
        return [self.once() for _ in range(n)]

    def warmup(self, policy: TimingPolicy) -> Warmup:
        """Call until timings settle (or the warm-up cap); the first call is reported apart."""
        times = [self.once()]
        spent = times[0]
        while len(times) < policy.warmup_min_calls or not (
            settled(times[1:], policy.warmup_window, policy.warmup_tol) or spent >= policy.warmup_limit_s
        ):
            times.append(self.once())
            spent += times[-1]
        ok = settled(times[1:], policy.warmup_window, policy.warmup_tol)
        tail = times[1:][-policy.warmup_window :] or times
        return Warmup(len(times), spent, times[0], ok, float(np.median(tail)))
