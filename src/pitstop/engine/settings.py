"""The settings every measuring capability shares, frozen and validated once (a bad value raises
``SettingError`` naming the field; the CLI maps the field to its flag).

``WorkerSettings``: where a run runs and in which workers (threads, device, seed, worker processes,
their time-out and environment): the base of train's ``TrainSettings`` and of ``RunSettings``.
``RunSettings``: an inference run's (bench, optimize, generate), adding how close a variant's
outputs must be to the reference's to count as "the same"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop._env import physical_cores
from pitstop._settings import check_numbers, normalise
from pitstop.errors import SettingError

__all__ = ["RunSettings", "WorkerSettings", "check_device"]


def check_device(device: str) -> None:
    """``cpu``, ``cuda``, ``cuda:N`` or ``auto``, else a ``SettingError`` naming ``device`` (no torch
    import: the CLI's parser builds settings before anything heavy loads)."""
    if device not in ("cpu", "auto") and not device.startswith("cuda"):
        raise SettingError("device", f"expected cpu, cuda or auto, got {device!r}")


@dataclass(frozen=True)
class WorkerSettings:
    """Where a measuring run runs and in which workers."""

    threads: int | None = None  # None: the physical cores
    device: str = "cpu"  # cpu, cuda, cuda:N or auto
    seed: int = 0
    isolate: bool = True  # each variant in worker processes of its own
    replicas: int = 3  # worker processes per variant: processes differ, so the process is sampled too
    timeout_s: float = 300.0  # a single worker request (set-up, one round) longer than this fails
    worker_env: tuple[tuple[str, str], ...] = ()  # extra environment of every worker (a dict is accepted)

    def __post_init__(self) -> None:
        check_numbers(self)  # NaN / inf in any float field, a seed out of range
        if isinstance(self.worker_env, Mapping):
            normalise(self, "worker_env", tuple(sorted(self.worker_env.items())))
        if self.threads is not None and (not isinstance(self.threads, int) or isinstance(self.threads, bool)
                                         or self.threads < 1):
            raise SettingError("threads", f"need at least 1, got {self.threads!r}")
        if not isinstance(self.device, str):
            raise SettingError("device", f"expected cpu, cuda or auto, got {self.device!r}")
        check_device(self.device)
        if not isinstance(self.replicas, int) or isinstance(self.replicas, bool) or self.replicas < 1:
            raise SettingError("replicas", f"need at least 1, got {self.replicas!r}")
        if not isinstance(self.timeout_s, int | float) or not self.timeout_s > 0:
            raise SettingError("timeout_s", f"must be positive, got {self.timeout_s!r}")
        if any(not k.strip() for k, _ in self.worker_env):
            raise SettingError("worker_env", "expected KEY=VALUE pairs with a non-empty KEY")

    @property
    def resolved_threads(self) -> int:
        """The thread count to run with (``threads`` or the physical cores)."""
        return self.threads or physical_cores()


@dataclass(frozen=True)
class RunSettings(WorkerSettings):
    """An inference run (bench, optimize, generate): ``WorkerSettings`` and how close is "the same"."""

    rel_tol: float = 1e-4  # fp32 variants must match the fp32 eval reference this closely
    reduced_tol: float = 2e-2  # bf16 / fp16 / int8 variants: relative error at most this...
    min_agreement: float = 0.99  # ...and the same argmax (logits) for at least this share
    fidelity_samples: int = 128  # rows fidelity is measured on (in batches like the timing batch): 8 cannot show 99%
    fidelity_inputs: Any = field(default=None, compare=False, repr=False)  # the user's own batch instead
    metric: str | None = None  # "file.py:fn": fn(model) -> score on the user's data; admits candidates instead
    metric_tolerance: float = 0.01  # a candidate's score may be at most this below the reference's

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("rel_tol", "reduced_tol"):
            if not getattr(self, name) > 0:
                raise SettingError(name, f"must be positive, got {getattr(self, name)}")
        if not 0 <= self.min_agreement <= 1:
            raise SettingError("min_agreement", f"must be in [0, 1], got {self.min_agreement}")
        if not 1 <= self.fidelity_samples <= 4096:
            raise SettingError("fidelity_samples", f"must be in [1, 4096], got {self.fidelity_samples}")
        if not self.metric_tolerance >= 0:
            raise SettingError("metric_tolerance", f"must be >= 0, got {self.metric_tolerance}")
        if self.metric is not None:
            normalise(self, "metric", _check_metric(self.metric))

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
