"""The optimizer's implementation: the for-loop over parameters, ``foreach`` (multi-tensor
kernels) or ``fused``. Which is fastest depends on the model and the machine: on a 2-core CPU
foreach AdamW was slower than the for-loop on a transformer (issue 16), so it is measured."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget


class OptimizerImpl(Technique):
    axis = "optimizer"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.optimizer != "for-loop" and config.optimizer not in target.optimizer_flags:
            return f"this optimizer has no {config.optimizer} implementation"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        return Code(optimizer=config.optimizer)
