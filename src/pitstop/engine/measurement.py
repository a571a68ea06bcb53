"""The values every measuring capability's rows are: one variant's ``Measurement`` at one batch
size (raw samples kept, grouped by the worker process that took them; statistics derive from them)
and a variant's speed-up over a baseline (``Comparison``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pitstop.stats import Ratio, Summary, summarize_groups

Status = Literal["ok", "rejected", "failed", "skipped"]


@dataclass
class Measurement:
    """One variant at one batch size. ``replica_samples_s`` holds every timed call, in seconds,
    grouped by the worker process (replica) that ran it."""

    variant: str
    config: dict[str, Any]
    batch_size: int
    status: Status = "ok"
    reason: str | None = None
    replica_samples_s: list[list[float]] = field(default_factory=list)
    peak_memory_bytes: int | None = None  # median over replicas
    activation_bytes: int | None = None
    fidelity: dict[str, Any] | None = None
    warmup: dict[str, Any] | None = None  # the first replica's
    note: str | None = None
    page_faults: int = 0  # over all timed calls (the allocator's cost shows up here)
    compile_s: float | None = None  # applying the technique + first call (compile, export), cold cache
    details: dict[str, Any] = field(default_factory=dict)  # what ran, e.g. {"quant_api": ...}
    phases_s: dict[str, float] = field(default_factory=dict)  # wall seconds per phase (start, prepare, ...)
    # the typed config measured (``config`` is its JSON form, threads resolved); None on rows read
    # back from JSON, which only render
    variant_config: Any = field(default=None, compare=False)  # the capability's config object
    _summary: tuple[int, Summary] | None = field(default=None, repr=False, compare=False)

    @property
    def samples_s(self) -> list[float]:
        """Every timed call, replicas concatenated."""
        return [t for group in self.replica_samples_s for t in group]

    def _seconds(self) -> Summary | None:
        n = sum(map(len, self.replica_samples_s))
        if n == 0:
            return None
        if self._summary is None or self._summary[0] != n:  # recomputed only when samples were added
            self._summary = (n, summarize_groups(self.replica_samples_s))
        return self._summary[1]

    @property
    def latency(self) -> Summary | None:
        """Milliseconds per call (per batch)."""
        s = self._seconds()
        return s.scaled(1e3) if s else None

    @property
    def per_sample(self) -> Summary | None:
        """Milliseconds per sample."""
        s = self._seconds()
        return s.scaled(1e3 / self.batch_size) if s else None

    @property
    def throughput(self) -> float | None:
        """Samples per second at the median latency."""
        lat = self.latency
        return self.batch_size / (lat.median / 1e3) if lat and lat.median > 0 else None

    @property
    def page_faults_per_call(self) -> float | None:
        """Page faults per timed call (None without timed calls)."""
        return self.page_faults / len(self.samples_s) if self.samples_s else None

    @property
    def measured(self) -> bool:
        """Has timing samples and did not fail."""
        return bool(self.samples_s) and self.status in ("ok", "rejected")


@dataclass
class Comparison:
    """A variant's speed-up over the baseline at one batch size."""

    variant: str
    baseline: str
    batch_size: int
    ratio: Ratio
