"""Settings objects: what a run measures and how, frozen and validated once, passed down whole.

``RunSettings`` (``pitstop.engine.settings``, re-exported here) holds what every measuring run of
a model's inference shares (threads, device, workers, tolerances); ``BenchSettings`` adds the
bench's batch sizes, variants and timing. A bad value raises ``SettingError`` naming the field
(``budget_s: must be positive, got -1``); the CLI maps the field to its flag. Fields left ``None``
(batch sizes, threads) are filled from the model and the machine by ``resolved(source)``, so the
CLI and the API build the settings before anything is loaded."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pitstop._settings import normalise
from pitstop.bench.variants.config import BASELINE, GRAD_MODES, VariantConfig, parse_variant
from pitstop.engine.settings import RunSettings
from pitstop.engine.source import Source, resolve_device
from pitstop.engine.timer import TimingPolicy
from pitstop.errors import SettingError

__all__ = ["BenchSettings", "RunSettings"]


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
