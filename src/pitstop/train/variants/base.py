"""What a training technique contributes to the recipe, and what its gate looks at.

Training's own base, beside inference's (``pitstop.bench.variants.base``, whose docstring says why
two): a training recipe sets up the model and its optimizer and wraps forward, loss and backward
(autocast, GradScaler, the optimizer's implementation, micro-batches), where an inference recipe
returns a faster callable."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pitstop.train.config import TrainConfig


@dataclass(frozen=True)
class TrainTarget:
    """The device and CPU, the model's inputs and batch, the optimizer's flags."""

    device: str = "cpu"
    native_bf16: bool = False
    compiler: bool = True  # a C++ compiler for inductor's CPU kernels
    physical_cores: int = 1
    has_4d_input: bool = False
    batch_size: int = 1
    optimizer_flags: tuple[str, ...] = ("foreach", "fused")
    checkpoint_blocks: tuple[str, ...] = ()  # what `pitstop memory`'s plan chose (empty: no budget given)
    ddp: bool = False  # a script under torchrun that builds a DistributedDataParallel in its own code
    fsdp: bool = False  # ... that calls FSDP2's fully_shard in its own code
    allow_emulated: bool = False  # a precision this hardware only emulates is measured anyway (--allow-emulated)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (crosses to worker processes)."""
        return {**asdict(self), "optimizer_flags": list(self.optimizer_flags),
                "checkpoint_blocks": list(self.checkpoint_blocks)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainTarget:
        """Inverse of ``to_dict``."""
        return cls(**{**data, "optimizer_flags": tuple(data["optimizer_flags"]),
                      "checkpoint_blocks": tuple(data["checkpoint_blocks"])})


@dataclass
class Code:
    """One technique's lines in the recipe."""

    imports: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)  # module-level functions the setup calls
    setup: list[str] = field(default_factory=list)  # body of apply(model), before the optimizer is built
    inputs: list[str] = field(default_factory=list)  # body of prepare_input(t)
    contexts: list[str] = field(default_factory=list)  # `with` items around forward and loss
    backward_contexts: list[str] = field(default_factory=list)  # `with` items around backward()
    optimizer: str | None = None  # the implementation: for-loop | foreach | fused
    scaler: str | None = None  # GradScaler construction, when the precision needs one
    set_to_none: bool | None = None
    step_begin: list[str] = field(default_factory=list)  # first lines of train_step
    accumulation: int | None = None  # micro-batches per optimizer step
    details: dict[str, Any] = field(default_factory=dict)


class Technique:
    """A handler: the gate and the code for one axis of the config."""

    axis = ""

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        """Why this config's value cannot run here, or None."""
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        """The recipe lines that apply this config's value."""
        return Code()
