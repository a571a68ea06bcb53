"""``OptimizeSettings``: what optimize searches for, within what time, built once (by the CLI or
from ``pitstop.optimize(...)``'s options) and passed down whole to the search and the report.

A bad value raises ``SettingError`` naming the field; ``resolved(source)`` fixes the fields left
to the model and the machine (search batch size, sweep, threads, device)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from pitstop._settings import normalise
from pitstop.bench.settings import BenchSettings
from pitstop.bench.variants.config import VariantConfig
from pitstop.engine.settings import RunSettings
from pitstop.engine.source import Source, resolve_device
from pitstop.errors import SettingError

Objective = Literal["latency", "throughput"]
START = VariantConfig("eval", "inference_mode")  # where the search starts, and what must be beaten
AXES = ("precision", "compile", "quant", "layout", "threads", "runtime")


@dataclass(frozen=True)
class OptimizeSettings(RunSettings):
    """What optimize searches for, and within what time (plus ``RunSettings``: threads, device, ...)."""

    replicas: int = 2  # worker processes per finalist
    objective: Objective = "latency"
    batch_size: int | None = None  # None: the smallest default batch (latency), the largest (throughput)
    batch_sizes: tuple[int, ...] | None = None  # the latency-vs-throughput sweep (None: the zoo model's)
    latency_budget_ms: float | None = None  # most samples/s with p90 latency per batch under this
    time_budget_s: float = 300.0  # the whole search; past it, the best so far is reported
    techniques: tuple[str, ...] = AXES  # the axes searched
    tolerance: float | None = None  # one relative-error limit for every candidate (sets rel_tol, reduced_tol)
    finalists: int = 3
    sweep: tuple[int, ...] = ()  # batch sizes of the latency-vs-throughput table (set by ``resolved``)

    def __post_init__(self) -> None:
        if self.tolerance is not None:
            if not self.tolerance > 0:
                raise SettingError("tolerance", f"must be positive, got {self.tolerance}")
            normalise(self, "rel_tol", self.tolerance)
            normalise(self, "reduced_tol", self.tolerance)
        super().__post_init__()
        if self.objective not in ("latency", "throughput"):
            raise SettingError("objective", f"must be latency or throughput, got {self.objective!r}")
        if self.time_budget_s < 10:
            raise SettingError("time_budget_s", f"must be at least 10 s, got {self.time_budget_s:g}")
        if self.latency_budget_ms is not None and not self.latency_budget_ms > 0:
            raise SettingError("latency_budget_ms", f"must be positive, got {self.latency_budget_ms:g}")
        normalise(self, "techniques", tuple(self.techniques))
        unknown = set(self.techniques) - set(AXES)
        if unknown:
            raise SettingError("techniques", f"unknown {', '.join(sorted(unknown))}; choose from {', '.join(AXES)}")
        if self.batch_size is not None and self.batch_size < 1:
            raise SettingError("batch_size", f"must be positive, got {self.batch_size}")
        for name in ("batch_sizes", "sweep"):
            sizes = getattr(self, name)
            if sizes is not None:
                normalise(self, name, tuple(sizes))
                if any(not isinstance(b, int) or b < 1 for b in sizes):
                    raise SettingError(name, f"need positive integers, got {list(sizes)}")
        if self.finalists < 1:
            raise SettingError("finalists", f"need at least 1, got {self.finalists}")

    @property
    def wants_sweep(self) -> bool:
        """Throughput (or a latency budget) compares batch sizes."""
        return self.objective == "throughput" or self.latency_budget_ms is not None

    @property
    def search_batch(self) -> int:
        """The batch size the search runs at (after ``resolved``)."""
        if self.batch_size is None:
            raise ValueError("OptimizeSettings.search_batch: call resolved(source) first")
        return self.batch_size

    def resolved(self, source: Source) -> OptimizeSettings:
        """The search batch size, the sweep, threads and device fixed for ``source`` on this machine."""
        defaults = tuple(self.batch_sizes or source.default_batch_sizes())
        batch = self.batch_size or (max(defaults) if self.wants_sweep else min(defaults))
        sweep = tuple(sorted(set(defaults) | {batch})) if self.wants_sweep else tuple(self.batch_sizes or ())
        return dataclasses.replace(self, batch_size=batch, sweep=sweep, threads=self.resolved_threads,
                                   device=resolve_device(self.device))

    @cached_property
    def bench(self) -> BenchSettings:
        """The settings of the search's groups (the timing policy of each stage is its own)."""
        run = {f.name: getattr(self, f.name) for f in dataclasses.fields(RunSettings)}
        return BenchSettings(**run, batch_sizes=(self.search_batch,), variants=(START,))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (the search's fields, then the groups' settings)."""
        return {"batch_size": self.batch_size, "objective": self.objective,
                "latency_budget_ms": self.latency_budget_ms, "time_budget_s": self.time_budget_s,
                "techniques": list(self.techniques), "finalists": self.finalists, "sweep": list(self.sweep),
                **self.bench.to_dict()}
