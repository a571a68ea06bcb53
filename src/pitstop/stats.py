"""Statistics from raw samples: median, percentiles, intervals of the median and of ratios.

Samples come in groups, one per worker process ("replica"): processes differ from each other
(allocator state, memory layout), so with several replicas the intervals come from a
hierarchical bootstrap (resample replicas, then calls within each), and disagreeing replicas
widen them. With one group the median's interval is the distribution-free order-statistic one.
Pure functions; nothing here times anything."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Verdict = Literal["faster", "slower", "within noise"]
_Z95 = 1.959964
MIN_CALLS = 3  # fewer timed calls on a side: no verdict but "within noise"


@dataclass(frozen=True)
class Summary:
    """Median, p10/p90 and the 95% interval of the median of one variant's samples."""

    median: float
    p10: float
    p90: float
    ci95: tuple[float, float]
    n: int

    @property
    def rel_halfwidth(self) -> float:
        """Half the interval's width relative to the median (the precision target's unit)."""
        lo, hi = self.ci95
        return (hi - lo) / 2 / self.median if self.median > 0 else math.inf

    def scaled(self, factor: float) -> Summary:
        """The same summary in other units (seconds to ms, per batch to per sample)."""
        lo, hi = self.ci95
        return Summary(self.median * factor, self.p10 * factor, self.p90 * factor,
                       (lo * factor, hi * factor), self.n)


Groups = Sequence[Sequence[float]]


def summarize(samples: Sequence[float]) -> Summary:
    """Summary of one group of raw samples; the median's interval from order statistics."""
    return summarize_groups([samples])


def summarize_groups(groups: Groups, *, resamples: int = 1000, seed: int = 0) -> Summary:
    """Pooled median and p10/p90; the median's interval accounts for differences between groups."""
    groups = [g for g in groups if len(g)]
    if not groups:
        raise ValueError("summarize: no samples")
    x = np.sort(np.concatenate([np.asarray(g, dtype=float) for g in groups]))
    p10, med, p90 = np.percentile(x, [10, 50, 90])
    if len(groups) == 1:
        ci = median_ci(x)
    else:
        lo, hi = np.percentile(_boot_medians(groups, resamples, np.random.default_rng(seed)), [2.5, 97.5])
        ci = (float(min(lo, med)), float(max(hi, med)))
    return Summary(float(med), float(p10), float(p90), ci, len(x))


def median_ci(samples: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Order-statistic interval of the median (binomial ranks, normal approximation).

    With fewer than 6 samples no interval narrower than the range exists; the range is returned."""
    x = np.sort(np.asarray(samples, dtype=float))
    n = len(x)
    if n < 6:
        return float(x[0]), float(x[-1])
    z = _Z95 if confidence == 0.95 else float(np.sqrt(2) * _erfinv(confidence))
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half))
    return float(x[lo]), float(x[hi])


def _erfinv(y: float) -> float:
    """Inverse error function (Winitzki's approximation; only for non-default confidences)."""
    a = 0.147
    ln = math.log(1 - y * y)
    first = 2 / (math.pi * a) + ln / 2
    return math.copysign(math.sqrt(math.sqrt(first**2 - ln / a) - first), y)


@dataclass(frozen=True)
class Ratio:
    """A ratio of medians with its bootstrap 95% interval and verdict."""

    median: float
    ci95: tuple[float, float]
    verdict: Verdict


def speedup(baseline: Sequence[float], candidate: Sequence[float], **kwargs: int) -> Ratio:
    """Speed-up of ``candidate`` over ``baseline`` for one group each (see ``speedup_groups``)."""
    return speedup_groups([baseline], [candidate], **kwargs)


def speedup_groups(baseline: Groups, candidate: Groups, *, resamples: int = 1000, seed: int = 0) -> Ratio:
    """Speed-up of ``candidate`` over ``baseline`` (ratio of pooled medians, >1 = faster).

    The interval bootstraps both sides independently (hierarchically when they have several
    groups); "within noise" when it contains 1. Fewer than ``MIN_CALLS`` calls on a side cannot
    tell a difference from noise: the interval is widened to include 1."""
    a = [np.asarray(g, dtype=float) for g in baseline if len(g)]
    b = [np.asarray(g, dtype=float) for g in candidate if len(g)]
    if not a or not b:
        raise ValueError("speedup: both sample sets must be non-empty")
    rng = np.random.default_rng(seed)
    n = min(_bounded(a, resamples), _bounded(b, resamples))  # the same count on both sides
    ratios = _boot_medians(a, n, rng) / _boot_medians(b, n, rng)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    ratio = float(np.median(np.concatenate(a)) / np.median(np.concatenate(b)))
    lo, hi = min(float(lo), ratio), max(float(hi), ratio)
    if min(sum(map(len, a)), sum(map(len, b))) < MIN_CALLS:
        lo, hi = min(lo, 1.0), max(hi, 1.0)
    verdict: Verdict = "within noise" if lo <= 1.0 <= hi else ("faster" if lo > 1.0 else "slower")
    return Ratio(ratio, (lo, hi), verdict)


def _boot_medians(groups: Sequence[np.ndarray] | Groups, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution of the pooled median: replicas resampled, then calls within them."""
    arrays = [np.asarray(g, dtype=float) for g in groups]
    if len(arrays) == 1:
        x = arrays[0]
        return np.median(rng.choice(x, (_bounded(arrays, resamples), len(x))), axis=1)
    picks = rng.integers(0, len(arrays), (resamples, len(arrays)))
    out = np.empty(resamples)
    for i, chosen in enumerate(picks):
        out[i] = np.median(np.concatenate([rng.choice(arrays[r], len(arrays[r])) for r in chosen]))
    return out


def _bounded(groups: Sequence[np.ndarray], resamples: int) -> int:
    """Fewer resamples (at least 400) for one huge sample set: bounded work."""
    if len(groups) != 1:
        return resamples
    return max(400, min(resamples, 8_000_000 // max(len(groups[0]), 1)))


def replica_spread(groups: Groups) -> float:
    """Relative 95% half-width from the spread of the groups' medians (0 for a single group)."""
    meds = [float(np.median(g)) for g in groups if len(g)]
    if len(meds) < 2 or min(meds) <= 0:
        return 0.0
    logs = np.log(meds)
    return float(_Z95 * np.std(logs, ddof=1) / math.sqrt(len(logs)))
