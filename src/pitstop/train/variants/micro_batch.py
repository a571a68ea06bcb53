"""Micro-batches with gradient accumulation: the batch runs in ``batch / micro_batch`` passes, each
loss divided by their number, one optimizer step: the effective batch stays the same. Smaller
passes may fit in cache or in memory; batch-norm statistics then come from each micro-batch (the
trajectory gate judges whether training still goes the same way)."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget


class MicroBatch(Technique):
    axis = "micro_batch"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        micro = config.micro_batch
        if micro is None:
            return None
        if micro >= target.batch_size:
            return f"micro-batch {micro} is not smaller than the batch {target.batch_size}"
        if target.batch_size % micro:
            return f"micro-batch {micro} does not divide the batch {target.batch_size} (the mean would change)"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        if config.micro_batch is None:
            return Code()
        return Code(accumulation=target.batch_size // config.micro_batch)
