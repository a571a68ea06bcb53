"""``channels_last``: the model's 4-D weights and the 4-D inputs in NHWC memory format."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget


class Layout(Technique):
    axis = "layout"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.layout and not target.has_4d_input:
            return "channels_last applies to 4-D (image) inputs; this model has none"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        if not config.layout:
            return Code()
        return Code(setup=["model = model.to(memory_format=torch.channels_last)"],
                    inputs=["if t.dim() == 4:", "    t = t.contiguous(memory_format=torch.channels_last)"])
