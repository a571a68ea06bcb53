"""The user's training problem as code: the optimizer (class, hyper-parameters and parameter
groups, read from the optimizer the user's factory builds; the implementation flags are pitstop's
to vary) and the loss (the model's own, a ``torch.nn`` loss module, a function imported from its
module or file, or cross-entropy against a target). Both become lines of the recipe, so a worker
process and the user's own script rebuild exactly what was measured. Both are plain data too
(``to_dict`` / ``from_dict``): they cross to the worker that inspects the model."""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pitstop.errors import SettingError, UsageError

IMPLEMENTATION_FLAGS = ("foreach", "fused", "capturable", "differentiable")  # pitstop's axis, not the user's
CLOSURE_OPTIMIZERS = ("LBFGS",)  # step(closure) re-evaluates the loss: not a step per batch
_LITERALS = (bool, int, float, str, type(None))
Options = tuple[tuple[str, Any], ...]
Group = tuple[tuple[str, ...], Options]  # parameter names, the options that differ from the defaults


@dataclass(frozen=True)
class OptimizerSpec:
    """``torch.optim.<name>(params, **options)``; ``groups`` (when the user's optimizer had several
    parameter groups, or not all parameters) lists each group's parameter names and own options."""

    name: str  # class name in torch.optim, e.g. "AdamW"
    options: Options = ()
    groups: tuple[Group, ...] = ()

    def __post_init__(self) -> None:
        cls = getattr(torch.optim, self.name, None)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
            known = ", ".join(sorted(n.lower() for n in dir(torch.optim) if _is_optimizer(n)
                                     and n not in CLOSURE_OPTIMIZERS))
            raise SettingError("optimizer", f"unknown optimizer {self.name!r}; choose from {known}")
        if self.name in CLOSURE_OPTIMIZERS:
            raise SettingError("optimizer", f"{self.name} steps with a closure that re-evaluates the loss; pitstop "
                                            "train measures optimizers that step once per batch (adamw, sgd, ...)")
        for key, value in [*self.options, *(kv for _, opts in self.groups for kv in opts)]:
            _check_option(key, value)

    @property
    def flags(self) -> tuple[str, ...]:
        """Which implementation flags the class takes (``foreach``, ``fused``)."""
        params = inspect.signature(getattr(torch.optim, self.name).__init__).parameters
        return tuple(f for f in ("foreach", "fused") if f in params)

    def code(self, implementation: str) -> str:
        """The constructor call with the implementation flag set (on ``param_groups(model)`` when
        the user's optimizer had groups, else on ``model.parameters()``)."""
        flag = {"for-loop": "foreach=False", "foreach": "foreach=True", "fused": "fused=True"}[implementation]
        args = [f"{k}={v!r}" for k, v in self.options]
        if implementation == "for-loop" and "foreach" not in self.flags:
            flag = ""
        params = "param_groups(model)" if self.groups else "model.parameters()"
        return f"torch.optim.{self.name}({params}, {', '.join([*args, flag] if flag else args)})"

    def groups_code(self) -> str:
        """Module-level lines that rebuild the parameter groups by name ('' without groups)."""
        if not self.groups:
            return ""
        rows = "".join(f"    ({list(names)!r}, {dict(opts)!r}),\n" for names, opts in self.groups)
        return ("\n\n# the parameter groups of your optimizer, by parameter name, each with its own options\n"
                f"PARAM_GROUPS = [\n{rows}]\n\n\n"
                "def param_groups(model):\n"
                '    """Your optimizer\'s parameter groups on `model` (a compiled model\'s names included)."""\n'
                '    named = {name.replace("_orig_mod.", ""): p for name, p in model.named_parameters()}\n'
                '    return [{"params": [named[n] for n in names], **options} for names, options in PARAM_GROUPS]\n')

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (and for a worker: ``from_dict`` inverts it)."""
        return {"name": self.name, "options": dict(self.options),
                "groups": [{"params": list(names), "options": dict(opts)} for names, opts in self.groups]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OptimizerSpec:
        """Inverse of ``to_dict``."""
        groups = tuple((tuple(g["params"]), _options(g["options"])) for g in data.get("groups", ()))
        return cls(data["name"], _options(data.get("options", {})), groups)

    @classmethod
    def named(cls, name: str, **options: Any) -> OptimizerSpec:
        """From a CLI name (``adamw``, case-insensitive) and options such as ``lr``."""
        match = next((n for n in dir(torch.optim) if n.lower() == name.lower() and _is_optimizer(n)), name)
        return cls(match, _options({k: v for k, v in options.items() if v is not None}))

    @classmethod
    def from_factory(cls, factory: Callable[[Any], torch.optim.Optimizer], model: nn.Module) -> OptimizerSpec:
        """Read class, hyper-parameters and parameter groups from the optimizer ``factory(params)``
        builds: it is given ``model.parameters()``, or the model itself when its first parameter is
        named ``model`` (``lambda model: model.configure_optimizers(...)`` builds named groups)."""
        try:
            first = next(iter(inspect.signature(factory).parameters), "")
        except (TypeError, ValueError):
            first = ""
        try:
            optimizer = factory(model if first == "model" else model.parameters())
        except Exception as exc:
            raise UsageError(f"optimizer: the factory raised {type(exc).__name__}: {exc}; pass "
                             "optimizer=lambda params: torch.optim.AdamW(params, lr=1e-3)") from None
        return cls.of(optimizer, model)

    @classmethod
    def of(cls, optimizer: Any, model: nn.Module) -> OptimizerSpec:
        """The spec of a built optimizer of ``model``'s parameters."""
        if not isinstance(optimizer, torch.optim.Optimizer) or type(optimizer).__module__.split(".")[:2] != [
                "torch", "optim"]:
            raise UsageError(f"optimizer: the factory must return a torch.optim optimizer, got "
                             f"{type(optimizer).__name__}; pitstop varies its foreach/fused flags")
        accepted = inspect.signature(type(optimizer).__init__).parameters
        defaults = {k: _plain(k, v) for k, v in optimizer.defaults.items() if _kept(k, accepted)}
        names = {id(p): n for n, p in model.named_parameters()}
        groups = []
        for group in optimizer.param_groups:
            unknown = [p for p in group["params"] if id(p) not in names]
            if unknown:
                raise UsageError(f"optimizer: a parameter group holds {len(unknown)} tensor(s) that are not the "
                                 "model's parameters; build the optimizer from model.parameters() or named groups")
            own = {k: _plain(k, v) for k, v in group.items() if _kept(k, accepted)}
            groups.append((tuple(names[id(p)] for p in group["params"]),
                           _options({k: v for k, v in own.items() if defaults.get(k, object()) != v})))
        trainable = tuple(n for n, p in model.named_parameters() if p.requires_grad)
        plain = len(groups) == 1 and not groups[0][1] and groups[0][0] == trainable
        return cls(type(optimizer).__name__, _options(defaults), () if plain else tuple(groups))


def _kept(key: str, accepted: Any) -> bool:
    """An option the constructor takes and the user chose (not an implementation flag)."""
    return key != "params" and key not in IMPLEMENTATION_FLAGS and key in accepted


def _plain(key: str, value: Any) -> Any:
    """``value`` as a literal the recipe can write, or a usage error."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, tuple) and all(isinstance(v, _LITERALS) for v in value):
        return value
    if isinstance(value, _LITERALS):
        return value
    raise UsageError(f"optimizer: option {key}={type(value).__name__} cannot be written as code; use plain numbers")


def _options(values: dict[str, Any]) -> Options:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items()))


def _check_option(key: str, value: Any) -> None:
    """Numbers finite; ``lr`` and ``weight_decay`` not negative (a SettingError naming the option)."""
    numbers = value if isinstance(value, tuple) else (value,)
    for v in numbers:
        if isinstance(v, float) and not math.isfinite(v):
            raise SettingError(key, f"must be a finite number, got {v}")
    if key in ("lr", "weight_decay") and isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        raise SettingError(key, f"must not be negative, got {value:g}")


def _is_optimizer(name: str) -> bool:
    value = getattr(torch.optim, name, None)
    return isinstance(value, type) and issubclass(value, torch.optim.Optimizer) and value is not torch.optim.Optimizer


@dataclass(frozen=True)
class LossSpec:
    """The loss as recipe code: ``imports`` and ``setup`` lines at module level and the body of
    ``loss_fn(output, target)``; ``kind``: ``cross-entropy``, ``own`` (the model's own loss),
    ``output`` (the output is the loss), ``module`` or ``function``."""

    description: str
    setup: tuple[str, ...] = ()
    body: str = "return torch.nn.functional.cross_entropy(first_tensor(output), target)"
    imports: tuple[str, ...] = field(default=())
    kind: str = "cross-entropy"

    @property
    def needs_target(self) -> bool:
        """Whether the loss compares the output with a separate target."""
        return self.kind in ("cross-entropy", "module") or "target" in self.body.removeprefix("return ")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (and for a worker: ``from_dict`` inverts it)."""
        return {"description": self.description, "code": self.body.removeprefix("return "), "kind": self.kind,
                "setup": list(self.setup), "imports": list(self.imports)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LossSpec:
        """Inverse of ``to_dict``."""
        return cls(data["description"], tuple(data.get("setup", ())), "return " + data["code"],
                   tuple(data.get("imports", ())), data.get("kind", "function"))

    @classmethod
    def default(cls) -> LossSpec:
        """Cross-entropy on the logits against the target."""
        return cls("cross-entropy on the logits against the target (default)")

    @classmethod
    def own(cls, expression: str, what: str) -> LossSpec:
        """The model's own loss, read from its output by ``expression`` (``output.loss``)."""
        return cls(f"the model's own loss ({what})", body=f"return {expression}", kind="own")

    @classmethod
    def the_output(cls) -> LossSpec:
        """The model's output is the loss (a scalar)."""
        return cls("the model's output (a scalar loss)", body="return output", kind="output")

    @classmethod
    def of(cls, loss_fn: Any, has_target: bool) -> LossSpec:
        """From the user's ``loss_fn``: a ``torch.nn`` loss module, or a function importable from
        its module or (defined in a model file) from that file's path; None: cross-entropy against
        the target (a usage error without one)."""
        if loss_fn is None:
            if not has_target:
                raise UsageError("loss_fn: no loss function and no target; give a target (cross-entropy on the "
                                 "logits) or a loss function")
            return cls.default()
        if isinstance(loss_fn, nn.Module):
            return _module_loss(loss_fn)
        module, qualname = getattr(loss_fn, "__module__", None), getattr(loss_fn, "__qualname__", "")
        if not callable(loss_fn) or not module or "<" in qualname or "." in qualname \
                or module in ("__main__", "__mp_main__"):
            raise UsageError(f"loss_fn: {getattr(loss_fn, '__name__', type(loss_fn).__name__)!r} cannot be rebuilt "
                             "in a worker or a recipe; pass a torch.nn loss module (nn.CrossEntropyLoss()) or a "
                             "function defined at the top level of a module or of your model file")
        args = "first_tensor(output), target" if has_target else "first_tensor(output)"
        path = getattr(sys.modules.get(module), "__file__", None)
        if module.startswith("_pitstop_user_") and path:  # defined in the model file: imported by its path
            load = (f"def _user_loss():\n"
                    f'    """`{qualname}` from {path} (imported by its path, as pitstop measured it)."""\n'
                    f"    import importlib.util\n\n"
                    f"    spec = importlib.util.spec_from_file_location('pitstop_user_loss', {path!r})\n"
                    f"    module = importlib.util.module_from_spec(spec)\n"
                    f"    spec.loader.exec_module(module)\n"
                    f"    return getattr(module, {qualname!r})\n\n\n"
                    f"USER_LOSS = _user_loss()")
            return cls(f"{qualname} from {path}", setup=(load,), body=f"return USER_LOSS({args})", kind="function")
        return cls(f"{module}.{qualname}", imports=("import importlib",),
                   setup=(f"USER_LOSS = getattr(importlib.import_module({module!r}), {qualname!r})",),
                   body=f"return USER_LOSS({args})", kind="function")


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
    return LossSpec(ctor, setup=(f"LOSS = {ctor}",), body="return LOSS(first_tensor(output), target)", kind="module")


def own_loss(output: Any) -> tuple[str, str] | None:
    """How to read the model's own loss from its ``output`` (``output.loss``, ``output["loss"]``, a
    scalar element of a tuple such as nanoGPT's ``(logits, loss)``), with a description; None
    when the output carries none."""
    def scalar(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t.dim() == 0 and t.is_floating_point()

    if isinstance(output, dict) and scalar(output.get("loss")):
        return 'output["loss"]', 'output["loss"]'
    if not isinstance(output, torch.Tensor | dict) and scalar(getattr(output, "loss", None)):
        return "output.loss", "output.loss"
    if isinstance(output, tuple | list):
        index = next((i for i, t in enumerate(output) if scalar(t)), None)
        if index is not None:
            return f"output[{index}]", f"element {index} of the output tuple"
    return None


@dataclass(frozen=True)
class Problem:
    """What is trained, as the inspection settled it: the optimizer and the loss."""

    optimizer: OptimizerSpec
    loss: LossSpec


@dataclass(frozen=True)
class ProblemRequest:
    """What the user asked for, before the model is looked at (that happens in a worker): the
    optimizer and the loss when given, the target as a tensor (API) or a spec string."""

    optimizer: OptimizerSpec | None = None
    loss: LossSpec | None = None
    target: torch.Tensor | None = None
    target_spec: str | None = None
