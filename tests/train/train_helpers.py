"""Helpers for the train tests: a recipe executed as a worker executes it."""

from pathlib import Path
from typing import Any

from pitstop.bench.variants.handlers import build
from pitstop.train.config import TrainConfig
from pitstop.train.problem import LossSpec, OptimizerSpec
from pitstop.train.recipe import recipe_source
from pitstop.train.variants import TrainTarget

MODELS = str(Path(__file__).parent / "train_models.py")


def namespace(config: TrainConfig, tmp_path: Path, *, batch_size: int = 8, loss: LossSpec | None = None,
              optimizer: OptimizerSpec | None = None, **target: Any) -> dict[str, Any]:
    """The recipe of ``config`` executed (what a worker runs)."""
    tgt = TrainTarget(batch_size=batch_size, native_bf16=True, has_4d_input=True, physical_cores=2, **target)
    source = recipe_source(config, tgt, 2, optimizer or OptimizerSpec.named("adamw", lr=1e-2),
                           loss or LossSpec.of(None, True))
    return build(source, tmp_path / f"{config.name}.py")
