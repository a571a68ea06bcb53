"""DDP's knobs (``gradient_as_bucket_view``, ``static_graph``, ``bucket_cap_mb``): measured for a
script run under torchrun (``--nproc-per-node``) that builds its ``DistributedDataParallel`` in its
own code; the edit is a keyword on that call (``pitstop.train.script.edits``). A model without a
script has no DDP to tune: the gate says so."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget

KEYWORDS = {"grad-view": "gradient_as_bucket_view=True", "static-graph": "static_graph=True",
            "bucket-100": "bucket_cap_mb=100"}


class DistributedKnobs(Technique):
    axis = "ddp"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.ddp and not target.ddp:
            return ("DDP's knobs apply to a script run on several processes per node that builds its "
                    "DistributedDataParallel")
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        return Code()
