"""What an optimize search leaves: its stages (each an interleaved group of rows) and the outcome
(the winner, or why the start point stays), with the two helpers that read configs off rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from pitstop.bench.variants.config import VariantConfig
from pitstop.engine.measurement import Measurement
from pitstop.engine.stages import Outcome, Stage
from pitstop.optimize.settings import START

__all__ = ["SearchOutcome", "Stage", "complexity", "config_of"]


@dataclass
class SearchOutcome(Outcome):
    """The stages, the winner (None = the start point stays) and why."""

    runner_up: str = ""  # a candidate within noise of the winner, said in words ("" when none)
    failed: str = ""  # why nothing can be recommended (the start point itself failed): no recipe
    notes: list[str] = field(default_factory=list)  # what the load discipline decided (busy machine, drift)

    @property
    def winner_config(self) -> VariantConfig:
        """The chosen config (the start point when nothing beat it)."""
        return config_of(self.winner) if self.winner else START


def complexity(config: VariantConfig) -> int:
    """How much a recipe does: one per technique, two for compile and ONNX export (their
    preparation time and failure modes); the simpler of two near-tied candidates is kept."""
    return len(config.parts) + bool(config.compile) + (config.runtime != "torch")


def config_of(row: Measurement) -> VariantConfig:
    """The typed config a row was measured with (every row of the search carries one)."""
    if row.variant_config is None:
        raise ValueError(f"row {row.variant!r} carries no VariantConfig")
    return row.variant_config
