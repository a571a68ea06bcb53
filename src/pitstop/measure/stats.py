"""Statistics from raw samples: median, percentiles, intervals of the median and of ratios.

Pure functions over sequences of floats; nothing here times anything."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Verdict = Literal["faster", "slower", "within noise"]
_Z95 = 1.959964


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


def summarize(samples: Sequence[float]) -> Summary:
    """Summary of raw samples; the median's interval is distribution-free (order statistics)."""
    if not samples:
        raise ValueError("summarize: no samples")
    x = np.sort(np.asarray(samples, dtype=float))
    p10, med, p90 = np.percentile(x, [10, 50, 90])
    return Summary(float(med), float(p10), float(p90), median_ci(x), len(x))


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
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


def speedup(baseline: Sequence[float], candidate: Sequence[float], *, resamples: int = 2000,
            seed: int = 0) -> Ratio:
    """Speed-up of ``candidate`` over ``baseline`` (median time ratio, >1 = faster).

    The interval resamples both sample sets independently; "within noise" when it contains 1."""
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("speedup: both sample sets must be non-empty")
    rng = np.random.default_rng(seed)
    resamples = _affordable(resamples, len(a) + len(b))
    ma = np.median(rng.choice(a, (resamples, len(a))), axis=1)
    mb = np.median(rng.choice(b, (resamples, len(b))), axis=1)
    lo, hi = np.percentile(ma / mb, [2.5, 97.5])
    ratio = float(np.median(a) / np.median(b))
    verdict: Verdict = "within noise" if lo <= 1.0 <= hi else ("faster" if lo > 1.0 else "slower")
    return Ratio(ratio, (float(lo), float(hi)), verdict)


def _affordable(resamples: int, n: int, max_cells: int = 8_000_000) -> int:
    """Cap the bootstrap so a variant with very many samples stays fast (>= 400 resamples)."""
    return max(400, min(resamples, max_cells // max(n, 1)))
