"""The knobs of a script's data-parallel wrapper, measured for a script run under torchrun
(``--nproc-per-node``) that builds it in its own code; the edit is a keyword on that call
(``pitstop.train.script.edits``). DDP: ``gradient_as_bucket_view``, ``static_graph``,
``bucket_cap_mb``. FSDP2 (``fully_shard``, on every call): ``reshard_after_forward=False`` (keep the
gathered parameters from forward to backward: memory for one all-gather less per layer) and a bf16
``MixedPrecisionPolicy`` (parameters gathered and computed in bf16, gradients reduced in fp32; the
trajectory gate judges it like autocast). ``broadcast_buffers=False`` is not searched: with buffers
(BatchNorm) it changes what the ranks compute, without them there is nothing to save. A model
without a script has no wrapper to tune: the gate says so."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget

KEYWORDS = {"grad-view": "gradient_as_bucket_view=True", "static-graph": "static_graph=True",
            "bucket-100": "bucket_cap_mb=100", "fsdp-no-reshard": "reshard_after_forward=False",
            "fsdp-bf16-params": "mp_policy=torch.distributed.fsdp.MixedPrecisionPolicy(param_dtype=torch.bfloat16, "
                                "reduce_dtype=torch.float32)"}


def fits(option: str, target: TrainTarget) -> bool:
    """Whether the script builds the wrapper that ``option`` is a knob of."""
    return target.fsdp if option.startswith("fsdp-") else target.ddp


class DistributedKnobs(Technique):
    axis = "ddp"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.ddp and not fits(config.ddp, target):
            wrapper = "calls FSDP2's fully_shard" if config.ddp.startswith("fsdp-") else \
                "builds its DistributedDataParallel"
            return f"{config.ddp} applies to a script run on several processes per node that {wrapper}"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        return Code()
