"""The training techniques, one axis per module, each a handler: ``gate`` says why a config's
value cannot run here, ``code`` returns the recipe lines that apply it. ``TECHNIQUES`` is the
registry in recipe order; ``gate`` asks each handler."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget
from pitstop.train.variants.checkpointing import Checkpointing
from pitstop.train.variants.compile import Compile
from pitstop.train.variants.ddp import DistributedKnobs
from pitstop.train.variants.fp32_math import Fp32Math
from pitstop.train.variants.layout import Layout
from pitstop.train.variants.micro_batch import MicroBatch
from pitstop.train.variants.optimizer import OptimizerImpl
from pitstop.train.variants.precision import Precision
from pitstop.train.variants.threads import Threads
from pitstop.train.variants.zero_grad import ZeroGrad

TECHNIQUES: tuple[Technique, ...] = (Threads(), Precision(), Fp32Math(), Layout(), Checkpointing(), Compile(),
                                     OptimizerImpl(), ZeroGrad(), MicroBatch(), DistributedKnobs())

__all__ = ["TECHNIQUES", "Code", "Technique", "TrainTarget", "codes", "gate"]


def gate(config: TrainConfig, target: TrainTarget) -> str | None:
    """The first reason this config cannot run on this target, or None."""
    return next((r for r in (t.gate(config, target) for t in TECHNIQUES) if r), None)


def codes(config: TrainConfig, target: TrainTarget) -> list[Code]:
    """Every handler's recipe lines for this config, in recipe order."""
    return [t.code(config, target) for t in TECHNIQUES]
