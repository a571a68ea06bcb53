"""Settings objects: what a run measures and how, frozen and validated once, passed down whole.

``RunSettings`` holds what every measuring run shares (threads, device, workers, tolerances);
``BenchSettings`` adds the bench's batch sizes, variants and timing. A bad value raises
``SettingError`` naming the field (``budget_s: must be positive, got -1``); the CLI maps the field
to its flag. Fields left ``None`` (batch sizes, threads) are filled from the model and the machine
by ``resolved(source)``, so the CLI and the API build the settings before anything is loaded."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop._env import physical_cores
from pitstop._settings import check_numbers, normalise
from pitstop.bench.variants.config import BASELINE, GRAD_MODES, VariantConfig, parse_variant
from pitstop.engine.source import Source, check_device, resolve_device
from pitstop.engine.timer import TimingPolicy
from pitstop.errors import SettingError

__all__ = ["BenchSettings", "RunSettings"]


@dataclass(frozen=True)
class RunSettings:
    """What every measuring run shares: where it runs, in which workers, and how close is "the same"."""

    threads: int | None = None  # None: the physical cores
    device: str = "cpu"  # cpu, cuda, cuda:N or auto
    seed: int = 0
    isolate: bool = True  # each variant in worker processes of its own
    replicas: int = 3  # worker processes per variant: processes differ, so the process is sampled too
    timeout_s: float = 300.0  # a single worker request (set-up, one round) longer than this fails
    rel_tol: float = 1e-4  # fp32 variants must match the fp32 eval reference this closely
    reduced_tol: float = 2e-2  # bf16 / fp16 / int8 variants: relative error at most this...
    min_agreement: float = 0.99  # ...and the same argmax (logits) for at least this share
    worker_env: tuple[tuple[str, str], ...] = ()  # extra environment of every worker (a dict is accepted)
    fidelity_samples: int = 128  # rows fidelity is measured on (in batches like the timing batch): 8 cannot show 99%
    fidelity_inputs: Any = field(default=None, compare=False, repr=False)  # the user's own batch instead
    metric: str | None = None  # "file.py:fn": fn(model) -> score on the user's data; admits candidates instead
    metric_tolerance: float = 0.01  # a candidate's score may be at most this below the reference's

    def __post_init__(self) -> None:
        check_numbers(self)  # NaN / inf in any float field, a seed out of range
        if isinstance(self.worker_env, Mapping):
            normalise(self, "worker_env", tuple(sorted(self.worker_env.items())))
        if self.threads is not None and self.threads < 1:
            raise SettingError("threads", f"need at least 1, got {self.threads}")
        check_device(self.device)
        if self.replicas < 1:
            raise SettingError("replicas", f"need at least 1, got {self.replicas}")
        for name in ("timeout_s", "rel_tol", "reduced_tol"):
            if not getattr(self, name) > 0:
                raise SettingError(name, f"must be positive, got {getattr(self, name)}")
        if not 0 <= self.min_agreement <= 1:
            raise SettingError("min_agreement", f"must be in [0, 1], got {self.min_agreement}")
        if any(not k.strip() for k, _ in self.worker_env):
            raise SettingError("worker_env", "expected KEY=VALUE pairs with a non-empty KEY")
        if not 1 <= self.fidelity_samples <= 4096:
            raise SettingError("fidelity_samples", f"must be in [1, 4096], got {self.fidelity_samples}")
        if not self.metric_tolerance >= 0:
            raise SettingError("metric_tolerance", f"must be >= 0, got {self.metric_tolerance}")
        if self.metric is not None:
            normalise(self, "metric", _check_metric(self.metric))

    @property
    def resolved_threads(self) -> int:
        """The thread count to run with (``threads`` or the physical cores)."""
        return self.threads or physical_cores()

    def run_dict(self) -> dict[str, Any]:
        """The shared fields as the JSON ``settings`` records them."""
        return {"threads": self.threads, "device": self.device, "seed": self.seed,
                "timeout_s": self.timeout_s, "isolate": self.isolate, "replicas": self.replicas,
                "tolerance_rel": self.rel_tol, "tolerance_reduced_rel": self.reduced_tol,
                "min_agreement": self.min_agreement, "worker_env": dict(self.worker_env),
                "fidelity_samples": self.fidelity_samples, "metric": self.metric,
                "metric_tolerance": self.metric_tolerance,
                "fidelity_inputs": _describe(self.fidelity_inputs)}


def _check_metric(metric: str) -> str:
    """``file.py:fn`` (made absolute: workers run elsewhere) or ``package.module:fn``; the file must
    exist (``fidelity.load_metric`` finds the function when the run starts)."""
    target, sep, name = metric.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise SettingError("metric", f"expected file.py:function or package.module:function, got {metric!r}")
    if not target.endswith(".py"):
        return metric
    if not Path(target).is_file():
        raise SettingError("metric", f"file {target!r} not found; give an existing file.py:function")
    return f"{Path(target).resolve()}:{name}"


def _describe(inputs: Any) -> str | None:
    """The user's fidelity inputs, described (``float32[256,16]``)."""
    from pitstop.models.inputs import Inputs

    return None if inputs is None else Inputs.coerce(inputs).describe()


@dataclass(frozen=True)
class BenchSettings(RunSettings):
    """What a bench measures and how; every field is recorded in the JSON ``settings``."""

    batch_sizes: tuple[int, ...] | None = None  # None: the zoo model's, else the example inputs' own
    variants: tuple[VariantConfig, ...] = GRAD_MODES  # names such as "eval+no_grad" are read here
    budget_s: float = 5.0  # timed seconds per variant and batch size at most
    target: float = 0.02  # stop when each median's 95% interval is within this fraction

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.batch_sizes is not None:
            normalise(self, "batch_sizes", tuple(self.batch_sizes))
            if not self.batch_sizes or any(not isinstance(b, int) or b < 1 for b in self.batch_sizes):
                raise SettingError("batch_sizes", f"need positive integers, got {list(self.batch_sizes)}")
        normalise(self, "variants", tuple(parse_variant(v) if isinstance(v, str) else v for v in self.variants))
        if not self.variants:
            raise SettingError("variants", "need at least one variant")
        if not self.budget_s > 0:
            raise SettingError("budget_s", f"must be positive, got {self.budget_s}")
        if not 0 < self.target < 1:
            raise SettingError("target", f"must be in (0, 1), got {self.target}")

    @property
    def policy(self) -> TimingPolicy:
        """How long and how precisely each variant is timed."""
        return TimingPolicy(target=self.target, budget_s=self.budget_s)

    def resolved(self, source: Source) -> BenchSettings:
        """The settings with batch sizes, threads and device fixed for ``source`` on this machine."""
        return dataclasses.replace(self, batch_sizes=self.batch_sizes or source.default_batch_sizes(),
                                   threads=self.resolved_threads, device=resolve_device(self.device))

    @property
    def baseline(self) -> str:
        """``train+grad`` when measured, else the first variant."""
        names = [v.name for v in self.variants]
        return BASELINE.name if BASELINE.name in names else names[0]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"batch_sizes": list(self.batch_sizes or ()), "variants": [v.name for v in self.variants],
                **self.run_dict(), "timing": self.policy.to_dict()}
