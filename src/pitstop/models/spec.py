"""Model specs: ``zoo:NAME``, ``path/to/file.py:factory`` and ``package.module:factory``.

A factory returns an ``nn.Module`` or ``(module, example_inputs)``; it may take ``batch_size``.
Every failure is a ``PitstopError`` with one line that names the problem and the fix."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop.errors import ModelLoadError, ModelSpecError, last_line
from pitstop.models.inputs import Inputs, InputSpec, parse_input_spec
from pitstop.models.zoo import ZOO


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec; ``build`` calls the factory."""

    text: str
    kind: str  # "zoo" | "file" | "module"
    target: str  # zoo name, file path or module name
    factory: str | None

    def build(self, batch_size: int | None, seed: int = 0) -> tuple[nn.Module, Inputs | None]:
        """Call the factory with seeded RNGs, so every process builds the same weights.

        Inputs come at ``batch_size`` (passed to the factory if it takes it, else resized);
        ``batch_size=None`` returns the factory's own."""
        seed_everything(seed)
        fn = self._factory()
        kwargs = {"batch_size": batch_size} if batch_size and _accepts(fn, "batch_size") else {}
        try:
            value = fn(**kwargs)
        except Exception as exc:  # the user's code: any exception becomes one line
            raise ModelLoadError(f"model {self.text}: the factory raised {last_line(exc)}") from exc
        module, inputs = _split(value, self.text)
        if inputs is not None and batch_size and "batch_size" not in kwargs:
            inputs = inputs.with_batch_size(batch_size)
        return module, inputs

    def takes_batch_size(self) -> bool:
        """Whether the factory builds for a given batch size (else one build serves every size)."""
        return _accepts(self._factory(), "batch_size")

    def default_input_spec(self) -> InputSpec | None:
        """The zoo model's input spec (None for user factories)."""
        return parse_input_spec(ZOO[self.target].input_spec) if self.kind == "zoo" else None

    def default_batch_sizes(self) -> tuple[int, ...] | None:
        """The zoo model's default batch sizes (None for user factories)."""
        return ZOO[self.target].batch_sizes if self.kind == "zoo" else None

    def resolve(self) -> Any:
        """The callable the spec names (a factory, or any function: ``pitstop gradcheck``)."""
        return self._factory()

    def _factory(self) -> Any:
        if self.kind == "zoo":
            return ZOO[self.target].build
        module = _import_file(self) if self.kind == "file" else _import_module(self)
        fn = getattr(module, self.factory or "", None)
        if fn is None:
            names = sorted((n for n, v in vars(module).items() if callable(v) and not n.startswith("_")),
                           key=lambda n: (n[0].isupper(), n))  # factories (functions) before classes
            raise ModelSpecError(
                f"model {self.text}: {self.target} has no attribute {self.factory!r}"
                f" (callables there: {', '.join(names[:12]) or 'none'})"
            )
        if not callable(fn):
            raise ModelSpecError(f"model {self.text}: {self.factory!r} is not callable")
        return fn


def parse_model_spec(text: str) -> ModelSpec:
    """Parse a model spec string, checking zoo names and file existence."""
    text = text.strip()
    if text.startswith("zoo:"):
        name = text[4:]
        if name not in ZOO:
            raise ModelSpecError(f"unknown zoo model {name!r}; valid: {', '.join(sorted(ZOO))}")
        return ModelSpec(text, "zoo", name, None)
    target, sep, factory = text.rpartition(":")
    if not sep or not target or not factory:
        raise ModelSpecError(
            f"model spec {text!r} needs a factory: write 'zoo:NAME', 'path/to/file.py:build' "
            "or 'package.module:build'"
        )
    if target.endswith(".py") or "/" in target or "\\" in target:
        if not Path(target).is_file():
            raise ModelSpecError(f"model {text}: file {target!r} does not exist")
        return ModelSpec(text, "file", target, factory)
    return ModelSpec(text, "module", target, factory)


def seed_everything(seed: int) -> None:
    """Seed torch, Python and (if present) NumPy RNGs."""
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:  # numpy is a dependency, but seeding must never fail
        pass


def _import_file(spec: ModelSpec) -> Any:
    path = Path(spec.target).resolve()
    name = f"_pitstop_user_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # so the file can import its siblings
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ModelSpecError(f"model {spec.text}: cannot import {spec.target!r} as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ModelLoadError(f"model {spec.text}: importing {spec.target} raised {last_line(exc)}") from exc
    return module


def _import_module(spec: ModelSpec) -> Any:
    try:
        return importlib.import_module(spec.target)
    except ModuleNotFoundError as exc:
        raise ModelSpecError(
            f"model {spec.text}: no module named {exc.name!r}; check the name or use 'path/to/file.py:{spec.factory}'"
        ) from exc
    except Exception as exc:
        raise ModelLoadError(f"model {spec.text}: importing {spec.target} raised {last_line(exc)}") from exc


def _accepts(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _split(value: Any, text: str) -> tuple[nn.Module, Inputs | None]:
    if isinstance(value, nn.Module):
        return value, None
    if isinstance(value, tuple | list) and len(value) >= 2 and isinstance(value[0], nn.Module):
        return value[0], Inputs.coerce(value[1])  # train factories add (target, loss_fn, optimizer)
    raise ModelLoadError(
        f"model {text}: the factory returned {type(value).__name__}, expected an nn.Module "
        "or (module, example_inputs)"
    )
