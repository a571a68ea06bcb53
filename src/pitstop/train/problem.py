"""The user's training problem as code: the optimizer (class and hyper-parameters, read from the
optimizer the user's factory builds; the implementation flags are pitstop's to vary) and the loss
(a ``torch.nn`` loss module, an importable function, or the default). Both become lines of the
recipe, so a worker process and the user's own script rebuild exactly what was measured."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pitstop.errors import UsageError

IMPLEMENTATION_FLAGS = ("foreach", "fused", "capturable", "differentiable")  # pitstop's axis, not the user's
_LITERALS = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class OptimizerSpec:
    """``torch.optim.<name>(model.parameters(), **options)``."""

    name: str  # class name in torch.optim, e.g. "AdamW"
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        cls = getattr(torch.optim, self.name, None)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
            known = ", ".join(sorted(n.lower() for n in dir(torch.optim) if _is_optimizer(n)))
            raise UsageError(f"--optimizer: unknown optimizer {self.name!r}; choose from {known}")

    @property
    def flags(self) -> tuple[str, ...]:
        """Which implementation flags the class takes (``foreach``, ``fused``)."""
        params = inspect.signature(getattr(torch.optim, self.name).__init__).parameters
        return tuple(f for f in ("foreach", "fused") if f in params)

    def code(self, implementation: str) -> str:
        """The constructor call on ``model.parameters()`` with the implementation flag set."""
        flag = {"for-loop": "foreach=False", "foreach": "foreach=True", "fused": "fused=True"}[implementation]
        args = [f"{k}={v!r}" for k, v in self.options]
        if implementation == "for-loop" and "foreach" not in self.flags:
            flag = ""
        return f"torch.optim.{self.name}(model.parameters(), {', '.join([*args, flag] if flag else args)})"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"name": self.name, "options": dict(self.options)}

    @classmethod
    def named(cls, name: str, **options: Any) -> OptimizerSpec:
        """From a CLI name (``adamw``, case-insensitive) and options such as ``lr``."""
        match = next((n for n in dir(torch.optim) if n.lower() == name.lower() and _is_optimizer(n)), name)
        return cls(match, tuple(sorted((k, v) for k, v in options.items() if v is not None)))

    @classmethod
    def from_factory(cls, factory: Callable[[Any], torch.optim.Optimizer], model: nn.Module) -> OptimizerSpec:
        """Read class and hyper-parameters from the optimizer ``factory(params)`` builds."""
        try:
            optimizer = factory(model.parameters())
        except Exception as exc:
            raise UsageError(f"optimizer: the factory raised {type(exc).__name__}: {exc}; pass "
                             "optimizer=lambda params: torch.optim.AdamW(params, lr=1e-3)") from None
        if not isinstance(optimizer, torch.optim.Optimizer) or type(optimizer).__module__.split(".")[:2] != [
                "torch", "optim"]:
            raise UsageError(f"optimizer: the factory must return a torch.optim optimizer, got "
                             f"{type(optimizer).__name__}; pitstop varies its foreach/fused flags")
        if len(optimizer.param_groups) != 1:
            raise UsageError(f"optimizer: {len(optimizer.param_groups)} parameter groups; pitstop train "
                             "reproduces optimizers with one group (all parameters, one set of options)")
        options: list[tuple[str, Any]] = []
        accepted = inspect.signature(type(optimizer).__init__).parameters
        for key, value in optimizer.param_groups[0].items():
            if key == "params" or key in IMPLEMENTATION_FLAGS or key not in accepted:
                continue  # e.g. AdamW's group carries decoupled_weight_decay, which its constructor fixes
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = value.item()
            if isinstance(value, tuple) and all(isinstance(v, _LITERALS) for v in value):
                options.append((key, value))
            elif isinstance(value, _LITERALS):
                options.append((key, value))
            else:
                raise UsageError(f"optimizer: option {key}={type(value).__name__} cannot be written as code; "
                                 "use plain numbers")
        return cls(type(optimizer).__name__, tuple(options))


def _is_optimizer(name: str) -> bool:
    value = getattr(torch.optim, name, None)
    return isinstance(value, type) and issubclass(value, torch.optim.Optimizer) and value is not torch.optim.Optimizer


@dataclass(frozen=True)
class LossSpec:
    """The loss as recipe code: ``setup`` lines at module level and the body of ``loss_fn``."""

    description: str
    setup: tuple[str, ...] = ()
    body: str = "return torch.nn.functional.cross_entropy(first_tensor(output), target)"
    imports: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"description": self.description, "code": self.body.removeprefix("return ")}

    @classmethod
    def of(cls, loss_fn: Any, has_target: bool) -> LossSpec:
        """From the user's ``loss_fn`` (None = the default for the target)."""
        if loss_fn is None:
            if has_target:
                return cls("cross-entropy on the logits against the target (default)")
            return cls("mean of the output (default without a target)",
                       body="return first_tensor(output).float().mean()")
        if isinstance(loss_fn, nn.Module):
            return _module_loss(loss_fn)
        module, qualname = getattr(loss_fn, "__module__", None), getattr(loss_fn, "__qualname__", "")
        if callable(loss_fn) and module and module not in ("__main__", "__mp_main__") and "<" not in qualname \
                and "." not in qualname:
            call = f"{qualname}(first_tensor(output), target)" if has_target else f"{qualname}(first_tensor(output))"
            return cls(f"{module}.{qualname}", imports=(f"from {module} import {qualname}",), body=f"return {call}")
        raise UsageError(f"loss_fn: {getattr(loss_fn, '__name__', type(loss_fn).__name__)!r} cannot be rebuilt in "
                         "a worker or a recipe; pass a torch.nn loss module (nn.CrossEntropyLoss()) or a function "
                         "importable from a module (torch.nn.functional.cross_entropy)")


def _module_loss(loss: nn.Module) -> LossSpec:
    cls = type(loss)
    if not cls.__module__.startswith("torch.nn"):
        raise UsageError(f"loss_fn: {cls.__name__} is not a torch.nn loss; pass a torch.nn loss module or an "
                         "importable function")
    if any(b is not None for b in loss.buffers()) or any(True for _ in loss.parameters()):
        raise UsageError(f"loss_fn: {cls.__name__} holds tensors (e.g. class weights), which a recipe cannot "
                         "write as code; pass an importable function that builds them")
    params = inspect.signature(cls.__init__).parameters
    args = [f"{k}={getattr(loss, k)!r}" for k in params
            if k not in ("self", "size_average", "reduce") and isinstance(getattr(loss, k, object()), _LITERALS)]
    ctor = f"torch.nn.{cls.__name__}({', '.join(args)})"
    return LossSpec(ctor, setup=(f"LOSS = {ctor}",), body="return LOSS(first_tensor(output), target)")


@dataclass(frozen=True)
class Problem:
    """What is trained: the optimizer, the loss, and the target (a tensor, a spec, or none)."""

    optimizer: OptimizerSpec
    loss: LossSpec
    target: torch.Tensor | None = None  # the API's target for the example batch
    target_spec: Any = None  # an InputSpec for --target (made at the batch size)

    @property
    def has_target(self) -> bool:
        """Whether the loss reads a target."""
        return self.target is not None or self.target_spec is not None

    def target_at(self, batch_size: int, seed: int) -> torch.Tensor | None:
        """The target tensor for a batch size."""
        if self.target_spec is not None:
            return self.target_spec.make(batch_size, seed=seed + 1).args[0]  # not the inputs' random stream
        return self.target
