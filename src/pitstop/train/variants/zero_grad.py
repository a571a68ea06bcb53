"""``optimizer.zero_grad(set_to_none=...)``: None (torch's default; the next backward allocates
fresh gradients) or zeros (gradients are filled with 0 and accumulated in place)."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget


class ZeroGrad(Technique):
    axis = "zero_grad"

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        return Code(set_to_none=config.zero_grad == "none")
