"""A training variant as a config: every axis stated; its name joins the non-default parts
(``bf16-autocast+compile+fused``). The all-defaults config is the naive baseline: fp32 eager,
the optimizer's for-loop implementation, ``zero_grad()`` with its default ``set_to_none=True``,
the whole batch in one pass."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from pitstop.errors import UsageError

NAIVE_NAME = "naive"  # fp32 eager, for-loop optimizer: what every speed-up is measured against

_CHOICES: dict[str, tuple[Any, ...]] = {
    "precision": ("fp32", "bf16-autocast", "fp16-autocast"),
    "compile": (None, "default", "max-autotune", "reduce-overhead", "compiled-autograd"),
    "optimizer": ("for-loop", "foreach", "fused"),
    "zero_grad": ("none", "zeros"),
    "layout": (None, "channels_last"),
    "ddp": (None, "grad-view", "static-graph", "bucket-100", "fsdp-no-reshard", "fsdp-bf16-params"),
}


@dataclass(frozen=True)
class TrainConfig:
    """One way of running a training step."""

    precision: str = "fp32"  # fp16-autocast always comes with a GradScaler
    compile: str | None = None
    optimizer: str = "for-loop"  # the optimizer's implementation flag (foreach=False / True / fused=True)
    zero_grad: str = "none"  # "none": zero_grad(set_to_none=True), torch's default; "zeros": fill with 0
    layout: str | None = None
    threads: int | None = None  # None = the run's thread count
    micro_batch: int | None = None  # None = the whole batch; else accumulate batch/micro_batch passes
    checkpoint: tuple[str, ...] = ()  # blocks run under activation checkpointing
    ddp: str | None = None  # a knob of the script's DDP or FSDP2 (under torchrun): variants/ddp.py
    workers: int | None = None  # the training DataLoader's num_workers (persistent; pinned on CUDA): scripts only
    prefetch: int | None = None  # its prefetch_factor (batches made ahead per worker; torch's default 2): with workers
    cache: bool = False  # the training Dataset's items made once and kept (functools.cache on its __getitem__): scripts
    tf32: bool = False  # fp32 matmuls and convolutions on TF32 tensor cores (CUDA)
    cudnn_benchmark: bool = False  # cuDNN times its convolution algorithms for each new shape (CUDA)

    def __post_init__(self) -> None:
        for axis, choices in _CHOICES.items():
            if getattr(self, axis) not in choices:
                raise UsageError(f"train variant {axis} must be one of {', '.join(map(str, choices))}; "
                                 f"got {getattr(self, axis)!r}")
        for axis in ("threads", "micro_batch", "workers", "prefetch"):
            value = getattr(self, axis)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise UsageError(f"train variant {axis} must be a positive integer or None, got {value!r}")
        for axis in ("tf32", "cudnn_benchmark", "cache"):
            if not isinstance(getattr(self, axis), bool):
                raise UsageError(f"train variant {axis} must be True or False, got {getattr(self, axis)!r}")
        if self.prefetch is not None and self.workers is None:
            raise UsageError("train variant prefetch needs workers: a DataLoader without worker processes makes no "
                             "batches ahead")
        if not isinstance(self.checkpoint, tuple):
            object.__setattr__(self, "checkpoint", tuple(self.checkpoint))

    @property
    def parts(self) -> list[str]:
        """The non-default parts of the name, e.g. ``["bf16-autocast", "compile"]``."""
        parts = [] if self.precision == "fp32" else [self.precision]
        if self.compile:
            parts.append({"default": "compile", "compiled-autograd": "compiled-autograd"}.get(
                self.compile, f"compile-{self.compile}"))
        if self.optimizer != "for-loop":
            parts.append(self.optimizer)
        if self.zero_grad != "none":
            parts.append("zero-grad-zeros")
        if self.layout:
            parts.append(self.layout)
        if self.tf32:
            parts.append("tf32")
        if self.cudnn_benchmark:
            parts.append("cudnn-benchmark")
        if self.micro_batch is not None:
            parts.append(f"micro{self.micro_batch}")
        if self.checkpoint:
            parts.append(f"checkpoint{len(self.checkpoint)}")
        if self.ddp:
            parts.append(self.ddp if self.ddp.startswith("fsdp-") else f"ddp-{self.ddp}")
        if self.cache:
            parts.append("item-cache")
        if self.workers is not None:
            parts.append(f"workers{self.workers}")
        if self.prefetch is not None:
            parts.append(f"prefetch{self.prefetch}")
        if self.threads is not None:
            parts.append(f"threads{self.threads}")
        return parts

    @property
    def name(self) -> str:
        """``naive`` or the non-default parts joined with ``+``."""
        return "+".join(self.parts) or NAIVE_NAME

    @property
    def axes_set(self) -> list[str]:
        """The axes this config moves away from the naive step."""
        return [f.name for f in fields(self) if getattr(self, f.name) != getattr(NAIVE, f.name)]

    def to_dict(self, threads: int) -> dict[str, Any]:
        """The JSON ``config``: every axis, threads resolved."""
        return {**asdict(self), "threads": self.threads or threads, "checkpoint": list(self.checkpoint)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], run_threads: int | None = None) -> TrainConfig:
        """Inverse of ``to_dict``: a thread count equal to the run's (``run_threads``) was the default."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["checkpoint"] = tuple(values.get("checkpoint") or ())
        if run_threads is not None and values.get("threads") == run_threads:
            values["threads"] = None
        return cls(**values)

    def with_(self, **changes: Any) -> TrainConfig:
        """A copy with some axes changed."""
        return replace(self, **changes)


NAIVE = TrainConfig()
