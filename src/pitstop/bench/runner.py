"""The bench scenario: one group (``group.py``) per batch size, every variant in its own
workers, timed in interleaved rounds until the medians are precise enough or the budget is spent.

Nothing is lost: the JSON file is rewritten after every batch size; Ctrl-C finalises what was
measured and marks the run interrupted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from pitstop._env import environment
from pitstop.bench.group import GroupRunner, OnEvent, Source
from pitstop.bench.result import BenchResult
from pitstop.bench.source import SpecSource
from pitstop.bench.timer import TimingPolicy
from pitstop.bench.variants.config import BASELINE, GRAD_MODES, VariantConfig
from pitstop.errors import UsageError


@dataclass(frozen=True)
class BenchSettings:
    """What to measure and how; every field is recorded in the JSON ``settings``."""

    batch_sizes: tuple[int, ...]
    threads: int
    variants: tuple[VariantConfig, ...] = GRAD_MODES
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    timeout_s: float = 300.0  # a single worker request (set-up, one round) longer than this fails
    device: str = "cpu"
    seed: int = 0
    isolate: bool = True
    replicas: int = 3  # worker processes per variant: processes differ, so the process is sampled too
    rel_tol: float = 1e-4  # fp32 variants must match the fp32 eval reference this closely
    reduced_tol: float = 2e-2  # bf16 / fp16 / int8 variants: relative error at most this...
    min_agreement: float = 0.99  # ...and the same argmax (logits) for at least this share
    worker_env: tuple[tuple[str, str], ...] = ()  # extra environment of every worker (allocator tunables)

    def __post_init__(self) -> None:
        if not self.batch_sizes or any(b < 1 for b in self.batch_sizes):
            raise UsageError(f"--batch-sizes: need positive integers, got {list(self.batch_sizes)}")
        if self.threads < 1:
            raise UsageError(f"--threads: need at least 1, got {self.threads}")
        if not self.variants:
            raise UsageError("--variants: need at least one variant")
        if self.timeout_s <= 0:
            raise UsageError(f"--timeout-s must be positive, got {self.timeout_s}")
        if self.replicas < 1:
            raise UsageError(f"--replicas: need at least 1, got {self.replicas}")

    @property
    def baseline(self) -> str:
        """``train+grad`` when measured, else the first variant."""
        names = [v.name for v in self.variants]
        return BASELINE.name if BASELINE.name in names else names[0]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "batch_sizes": list(self.batch_sizes), "variants": [v.name for v in self.variants],
            "threads": self.threads, "device": self.device, "seed": self.seed,
            "timeout_s": self.timeout_s, "isolate": self.isolate, "replicas": self.replicas,
            "tolerance_rel": self.rel_tol, "tolerance_reduced_rel": self.reduced_tol,
            "min_agreement": self.min_agreement,
            "worker_env": dict(self.worker_env),
            "timing": self.policy.to_dict(),
        }


class BenchRunner:
    """Runs a bench; ``on_event(kind, info)`` reports progress; ``sink(result)`` persists."""

    def __init__(self, source: Source, settings: BenchSettings, *,
                 on_event: OnEvent | None = None, sink: Callable[[BenchResult], None] | None = None) -> None:
        self.source, self.settings = source, settings
        self.on_event = on_event or (lambda kind, info: None)
        self.sink = sink or (lambda result: None)
        env = environment(settings.threads, settings.seed)
        env["device"] = settings.device
        self.result = BenchResult(
            model=source.name, inputs={}, settings=settings.to_dict(), environment=env,
            baseline=settings.baseline,
            claims_key=source.spec.text if isinstance(source, SpecSource) else None,
        )

    def run(self) -> BenchResult:
        """Measure every batch size; returns the result (also on Ctrl-C, marked interrupted)."""
        threads_before = torch.get_num_threads()
        group = GroupRunner(self.source, self.settings, self.on_event)
        try:
            for i, batch_size in enumerate(self.settings.batch_sizes):
                group.run(batch_size, list(self.settings.variants), self.result.rows, first=i == 0)
                self.result.inputs = dict(group.inputs)
                self.result.environment["isolation"] = group.isolation
                self.sink(self.result)
            self.result.complete = True
        except KeyboardInterrupt:
            self.result.interrupted = True
        finally:
            group.close()
            torch.set_num_threads(threads_before)
            self.sink(self.result)
        return self.result
