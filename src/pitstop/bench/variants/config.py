"""Variants as configs: a ``VariantConfig`` states every axis of a variant; its name joins the
non-default parts (``eval+inference_mode+bf16-autocast+compile``).

Each axis's values and handler live in a file of their own (``grad.py``, ``precision.py``, ...;
registered in ``handlers.py``); ``prepare`` here is the plain eager call used for the fp32 eval
reference (and the fp64 one), which must not depend on any technique."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from torch import nn

from pitstop.bench.variants.compile import CHOICES as COMPILES
from pitstop.bench.variants.grad import GRAD_CONTEXTS as _GRAD_CONTEXTS
from pitstop.bench.variants.grad import Grad, Mode
from pitstop.bench.variants.layout import CHOICES as LAYOUTS
from pitstop.bench.variants.precision import CHOICES as PRECISIONS
from pitstop.bench.variants.quant import CHOICES as QUANTS
from pitstop.bench.variants.runtime import CHOICES as RUNTIMES
from pitstop.errors import SettingError, UsageError
from pitstop.models.inputs import Inputs


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
        for axis, value in self._technique_axes().items():
            if value not in _CHOICES[axis]:
                choices = ", ".join(str(c) for c in _CHOICES[axis])
                raise UsageError(f"variant {axis} must be one of {choices}; got {value!r}")

    def _technique_axes(self) -> dict[str, Any]:
        return {"precision": self.precision, "compile": self.compile, "quant": self.quant,
                "layout": self.layout, "runtime": self.runtime}

    @property
    def parts(self) -> list[str]:
        """The non-default technique parts of the name, e.g. ``["bf16-autocast", "compile"]``."""
        parts = [_part(k, v) for k, v in self._technique_axes().items() if v != _DEFAULTS[k]]
        return parts + ([f"threads{self.threads}"] if self.threads is not None else [])

    @property
    def plain(self) -> bool:
        """Only grad mode and threads: the eager module as it is."""
        return all(v == _DEFAULTS[k] for k, v in self._technique_axes().items())

    @property
    def name(self) -> str:
        """``mode+grad`` followed by the non-default parts, e.g. ``eval+inference_mode+compile``."""
        return "+".join([self.mode, self.grad, *self.parts])

    def to_dict(self, threads: int) -> dict[str, Any]:
        """The JSON ``config``: every axis, threads resolved."""
        return {**asdict(self), "threads": self.threads or threads}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VariantConfig:
        """Inverse of ``to_dict``."""
        return cls(**{k: data[k] for k in asdict(cls()) if k in data})


_CHOICES: dict[str, tuple[Any, ...]] = {  # each axis's values, its default first (from the axis's file)
    "precision": PRECISIONS, "compile": COMPILES, "quant": QUANTS, "layout": LAYOUTS, "runtime": RUNTIMES,
}
_DEFAULTS = {axis: choices[0] for axis, choices in _CHOICES.items()}


def _part(axis: str, value: Any) -> str:
    """A name part: ``compile`` for the default mode, ``compile-max-autotune``, else the value."""
    if axis == "compile":
        return "compile" if value == "default" else f"compile-{value}"
    return str(value)


# name part -> (axis, value), for every non-default choice
_PARTS = {_part(a, v): (a, v) for a, vs in _CHOICES.items() for v in vs if v != _DEFAULTS[a]}

BASELINE = VariantConfig("train", "grad")  # the naive baseline: train mode, autograd on
REFERENCE = VariantConfig("eval", "no_grad")  # the fp32 eager eval output fidelity is checked against
GRAD_MODES: tuple[VariantConfig, ...] = (
    BASELINE,
    VariantConfig("eval", "grad"),
    VariantConfig("eval", "no_grad"),
    VariantConfig("eval", "inference_mode"),
)


def parse_variant(name: str) -> VariantConfig:
    """A config from a name such as ``eval+no_grad`` or ``eval+inference_mode+bf16-autocast+compile``."""
    parts = [p.strip() for p in name.split("+") if p.strip()]
    if len(parts) < 2 or parts[0] not in ("train", "eval") or parts[1] not in _GRAD_CONTEXTS:
        valid = ", ".join(v.name for v in GRAD_MODES)
        raise SettingError("variants", f"cannot read {name!r}; expected MODE+GRAD such as {valid}")
    axes: dict[str, Any] = {}
    for extra in parts[2:]:
        if extra.startswith("threads") and extra[7:].isdigit() and int(extra[7:]) > 0:
            axis, value = "threads", int(extra[7:])
        elif extra in _PARTS:
            axis, value = _PARTS[extra]
        else:
            raise SettingError("variants", f"unknown part {extra!r} in {name!r}; known: {', '.join(_PARTS)}, threadsN")
        if axis in axes:
            raise SettingError("variants", f"{name!r} sets {axis} twice")
        axes[axis] = value
    return VariantConfig(parts[0], parts[1], **axes)  # type: ignore[arg-type]


def prepare(config: VariantConfig, module: nn.Module, inputs: Inputs) -> Callable[[], Any]:
    """A zero-argument callable running one eager forward in the config's mode and grad mode
    (technique axes are ignored: they are applied by ``techniques.apply``)."""
    module.train(config.mode == "train")
    grad_context = _GRAD_CONTEXTS[config.grad]
    args, kwargs = inputs.args, inputs.kwargs

    def forward() -> Any:
        with grad_context():
            return module(*args, **kwargs)

    return forward
