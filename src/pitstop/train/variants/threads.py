"""Intra-op threads: the recipe sets ``torch.set_num_threads``; more threads than physical
cores are not tried."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget


class Threads(Technique):
    axis = "threads"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.threads is not None and not 1 <= config.threads <= max(target.physical_cores, 1):
            return f"{config.threads} threads on {target.physical_cores} physical cores"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        return Code(details={"threads": config.threads} if config.threads else {})
