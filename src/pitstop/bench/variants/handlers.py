"""Techniques as config + handler pairs; the handlers write the recipe, and the recipe is what runs.

Each axis of ``VariantConfig`` has one handler, in a file of its own (``grad``, ``precision``,
``compile``, ``quant``, ``layout``, ``threads``, ``runtime``), registered in ``TECHNIQUES`` below in
the order their recipe lines run. A handler does two things: ``gate`` says why a
value cannot run on this target (hardware, missing extra, incompatible axes), and ``code``
returns the Python lines that apply it. ``recipe_source`` assembles those lines into a
self-contained module (``apply(model)`` -> an ``nn.Module``) and ``build`` executes that very
source, so the paste-able recipe is, byte for byte, what was measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from pitstop.bench.variants.base import Code, Target, Technique
from pitstop.bench.variants.code import render
from pitstop.bench.variants.compile import Compile
from pitstop.bench.variants.config import VariantConfig
from pitstop.bench.variants.grad import GradMode
from pitstop.bench.variants.layout import Layout
from pitstop.bench.variants.precision import Precision
from pitstop.bench.variants.quant import Quant
from pitstop.bench.variants.runtime import Runtime
from pitstop.bench.variants.threads import Threads
from pitstop.engine.recipe import build
from pitstop.models.inputs import Inputs

__all__ = ["TECHNIQUES", "Code", "Target", "Technique", "apply", "build", "details", "gate", "recipe_source"]


TECHNIQUES: tuple[Technique, ...] = (GradMode(), Precision(), Quant(), Layout(), Compile(), Threads(), Runtime())


def gate(config: VariantConfig, target: Target) -> str | None:
    """The first reason this config cannot run on this target, or None."""
    return next((r for r in (t.gate(config, target) for t in TECHNIQUES) if r), None)


def details(config: VariantConfig, target: Target) -> dict[str, Any]:
    """What the config's handlers record about how they ran (e.g. which int8 API)."""
    found: dict[str, Any] = {}
    for technique in TECHNIQUES:
        found.update(technique.code(config, target).details)
    return found


def recipe_source(config: VariantConfig, target: Target, threads: int, header: str = "") -> str:
    """A self-contained Python module that applies ``config`` to a model without pitstop."""
    codes = [t.code(config, target) for t in TECHNIQUES]
    return render(config, target.device, threads, codes, header, ort=config.runtime == "onnxruntime")


def apply(config: VariantConfig, target: Target, threads: int, module: nn.Module, example: Inputs,
          workdir: Path) -> tuple[nn.Module, dict[str, Any]]:
    """Apply ``config`` to ``module`` by running its recipe; returns the model and what ran."""
    source = recipe_source(config, target, threads)
    workdir.mkdir(parents=True, exist_ok=True)
    namespace = build(source, workdir / "recipe.py")
    fast = namespace["apply"](module, tuple(example.args), dict(example.kwargs))
    return fast, {**details(config, target), **namespace["DETAILS"]}

