"""The memory-layout axis: ``channels_last`` for models with 4-D (image) inputs."""

from __future__ import annotations

from pitstop.bench.variants.base import Axes, Code, Target, Technique

CHOICES = (None, "channels_last")


class Layout(Technique):
    """The model and its 4-D inputs in channels_last memory format."""

    axis = "layout"
    choices = CHOICES

    def gate(self, config: Axes, target: Target) -> str | None:
        if config.layout not in CHOICES:
            return f"unknown layout {config.layout!r}"
        if config.layout and not target.has_4d_input:
            return "channels_last applies to 4-D (image) inputs; this model has none"
        return None

    def code(self, config: Axes, target: Target) -> Code:
        if not config.layout:
            return Code()
        return Code(setup=["model = model.to(memory_format=torch.channels_last)"],
                    inputs=["if t.dim() == 4:", "    t = t.contiguous(memory_format=torch.channels_last)"])
