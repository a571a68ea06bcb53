"""Variants as configs, applied by one verb (``prepare``).

A ``VariantConfig`` states every axis of PRODUCT.md; its name joins the non-default parts.
Each axis has a handler; this release ships the grad-mode handlers (mode + grad) and threads.
Techniques that change the model (precision, compile, int8, layout, runtime) plug in here."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import torch
from torch import nn

from pitstop.errors import UsageError
from pitstop.models.inputs import Inputs

Mode = Literal["train", "eval"]
Grad = Literal["grad", "no_grad", "inference_mode"]

_GRAD_CONTEXTS: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
    "grad": torch.enable_grad,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}


@dataclass(frozen=True)
class VariantConfig:
    """One way of running the model: every axis stated."""

    mode: Mode = "eval"
    grad: Grad = "inference_mode"
    precision: str = "fp32"
    compile: str | None = None
    quant: str | None = None
    layout: str | None = None
    threads: int | None = None  # None = the run's thread count
    runtime: str = "torch"

    def __post_init__(self) -> None:
        if self.mode not in ("train", "eval"):
            raise UsageError(f"variant mode must be 'train' or 'eval', got {self.mode!r}")
        if self.grad not in _GRAD_CONTEXTS:
            raise UsageError(f"variant grad must be one of {', '.join(_GRAD_CONTEXTS)}, got {self.grad!r}")
        unsupported = {k: v for k, v in self._technique_axes().items() if v != _DEFAULTS[k]}
        if unsupported:
            raise UsageError(
                f"variant axes {unsupported} are not available in this release; "
                "bench measures grad modes (mode, grad) and threads"
            )

    def _technique_axes(self) -> dict[str, Any]:
        return {"precision": self.precision, "compile": self.compile, "quant": self.quant,
                "layout": self.layout, "runtime": self.runtime}

    @property
    def name(self) -> str:
        """``mode+grad`` followed by the non-default parts, e.g. ``eval+inference_mode``."""
        parts = [self.mode, self.grad]
        parts += [str(v) for k, v in self._technique_axes().items() if v != _DEFAULTS[k]]
        if self.threads is not None:
            parts.append(f"threads{self.threads}")
        return "+".join(parts)

    def to_dict(self, threads: int) -> dict[str, Any]:
        """The JSON ``config``: every axis, threads resolved."""
        return {**asdict(self), "threads": self.threads or threads}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VariantConfig:
        """Inverse of ``to_dict``."""
        return cls(**{k: data[k] for k in asdict(cls()) if k in data})


_DEFAULTS = {"precision": "fp32", "compile": None, "quant": None, "layout": None, "runtime": "torch"}

BASELINE = VariantConfig("train", "grad")  # the naive baseline: train mode, autograd on
REFERENCE = VariantConfig("eval", "no_grad")  # the fp32 eager eval output fidelity is checked against
GRAD_MODES: tuple[VariantConfig, ...] = (
    BASELINE,
    VariantConfig("eval", "grad"),
    VariantConfig("eval", "no_grad"),
    VariantConfig("eval", "inference_mode"),
)


def parse_variant(name: str) -> VariantConfig:
    """A config from a name such as ``eval+no_grad`` or ``eval+inference_mode+threads1``."""
    parts = [p.strip() for p in name.split("+") if p.strip()]
    if len(parts) < 2 or parts[0] not in ("train", "eval") or parts[1] not in _GRAD_CONTEXTS:
        valid = ", ".join(v.name for v in GRAD_MODES)
        raise UsageError(f"--variants: cannot read {name!r}; expected MODE+GRAD such as {valid}")
    threads = None
    for extra in parts[2:]:
        if extra.startswith("threads") and extra[7:].isdigit() and int(extra[7:]) > 0:
            threads = int(extra[7:])
        else:
            raise UsageError(f"--variants: unknown part {extra!r} in {name!r} (this release knows threadsN)")
    return VariantConfig(parts[0], parts[1], threads=threads)  # type: ignore[arg-type]


def with_threads(config: VariantConfig, threads: int) -> VariantConfig:
    """The config with its thread count fixed."""
    return replace(config, threads=threads)


def prepare(config: VariantConfig, module: nn.Module, inputs: Inputs) -> Callable[[], Any]:
    """Apply a config to a module: returns a zero-argument callable that runs one forward."""
    module.train(config.mode == "train")
    grad_context = _GRAD_CONTEXTS[config.grad]
    args, kwargs = inputs.args, inputs.kwargs

    def forward() -> Any:
        with grad_context():
            return module(*args, **kwargs)

    return forward
