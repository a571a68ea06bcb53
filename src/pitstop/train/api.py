"""``pitstop.train``: search the training-step techniques, decide, write the recipe, hand back a
``TrainSetup`` that applies it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop._env import environment, physical_cores
from pitstop.bench.source import ModuleSource, SpecSource
from pitstop.bench.timer import TimingPolicy
from pitstop.errors import UsageError
from pitstop.models.inputs import Inputs, InputSpec, parse_input_spec
from pitstop.models.spec import parse_model_spec
from pitstop.train.problem import LossSpec, OptimizerSpec, Problem
from pitstop.train.recipe import full_recipe, write_recipe_files
from pitstop.train.result import TrainReport, TrainSetup
from pitstop.train.search import TrainOutcome, TrainSearch
from pitstop.train.settings import AXES, TrainSettings

OptimizerFactory = Callable[[Any], torch.optim.Optimizer]
_RUN_OPTIONS = ("save", "json_path", "on_event", "memory_budget_mb", "techniques", "target_spec")


def train(model: nn.Module | str, inputs: Any = None, target: Any = None, *, loss_fn: Any = None,
          optimizer: OptimizerFactory | OptimizerSpec | None = None, time_budget_s: float = 300.0,
          **options: Any) -> TrainSetup:
    """Find the fastest training step for ``model`` here that still trains the same, and return it.

    ``inputs`` is a tensor or a tuple of tensors (``model(*inputs)``), ``target`` what
    ``loss_fn(output, target)`` compares with (default loss: cross-entropy on the logits, or the
    mean of the output without a target); ``optimizer`` builds the optimizer from parameters
    (default AdamW, lr 1e-3; its foreach/fused flags are pitstop's to vary). ``model`` may be a spec
    string (``"zoo:cnn"``) with an input spec and ``target`` a spec such as ``"int64[B]{0,10}"``.
    Options (``TrainSettings`` fields): ``batch_size``, ``threads``, ``device``, ``seed``, ``steps``
    (the planned run length: compilation must pay for itself), ``trajectory_steps``, ``tolerance``,
    ``replicas``, ``isolate``, ``timeout_s``; and ``techniques``, ``memory_budget_mb``, ``save``
    (a directory for recipe.py), ``json_path``, ``on_event``. Returns a ``TrainSetup``:
    ``model, optimizer, step = setup.apply(model)``; ``setup.report``; ``setup.recipe``."""
    report = run_train(model, inputs, target, loss_fn=loss_fn, optimizer=optimizer, time_budget_s=time_budget_s,
                       **options)
    if report.outcome.interrupted:
        raise KeyboardInterrupt  # the partial report is in json_path
    return TrainSetup(report)


def run_train(model: nn.Module | str, inputs: Any = None, target: Any = None, *, loss_fn: Any = None,
              optimizer: OptimizerFactory | OptimizerSpec | None = None, time_budget_s: float = 300.0,
              **options: Any) -> TrainReport:
    """The search alone, returning the report (the CLI prints it even when interrupted)."""
    run = {k: options.pop(k) for k in _RUN_OPTIONS if k in options}
    known = {f.name for f in fields(TrainSettings)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"train: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    source, problem, batch_size = resolve_problem(model, inputs, target, loss_fn, optimizer, options.get("seed", 0))
    budget = run.get("memory_budget_mb")
    settings = TrainSettings(**{"batch_size": batch_size, "threads": physical_cores(), **options,
                                "time_budget_s": time_budget_s, "device": _device(options.get("device", "cpu")),
                                "axes": tuple(run.get("techniques") or AXES),
                                "memory_budget_bytes": int(budget * 2**20) if budget else None,
                                "policy": options.get("policy", TimingPolicy())})
    sink = _json_sink(run.get("json_path"))
    if run.get("save"):
        _check_dir(run["save"])
    env = environment(settings.threads, settings.seed)
    env["device"] = settings.device
    search = TrainSearch(source, settings, problem, env, on_event=run.get("on_event"),
                         on_stage=(lambda o: sink(_report(search, o, problem, with_recipe=False))) if sink else None)
    outcome = search.run()
    env["isolation"] = search.group.isolation
    report = _report(search, outcome, problem, with_recipe=True)
    if run.get("save") and not outcome.interrupted:
        report.saved = write_recipe_files(report, Path(run["save"]))
    if sink:
        sink(report)
    return report


def _report(search: TrainSearch, outcome: TrainOutcome, problem: Problem, with_recipe: bool) -> TrainReport:
    s = search.settings
    recipe = ""
    if with_recipe and hasattr(search.group, "target"):
        config = outcome.winner_config
        header = (f"pitstop training recipe for {search.source.name}: {config.name} (batch {s.batch_size}, "
                  f"{config.threads or s.threads} threads, {s.device})")
        recipe = full_recipe(search.group.recipe(config, header), search.source, s.batch_size, problem.has_target,
                             problem.target_spec)
    return TrainReport(search.source.name, s.to_dict(), search.env, outcome, recipe,
                       {"optimizer": problem.optimizer.to_dict(), "loss": problem.loss.to_dict(),
                        "has_target": problem.has_target})


def resolve_problem(model: nn.Module | str, inputs: Any, target: Any, loss_fn: Any, optimizer: Any, seed: int
                    ) -> tuple[SpecSource | ModuleSource, Problem, int]:
    """The source of the model and inputs, the problem, and the batch size."""
    if isinstance(model, str):
        if inputs is not None and not isinstance(inputs, str):
            raise UsageError("with a model spec string, inputs must be an input spec string or None")
        spec_source = SpecSource(parse_model_spec(model), parse_input_spec(inputs) if inputs else None, seed)
        module, example = spec_source.spec.build(None, seed=seed)
        extra = _factory_extras(spec_source)
        target = target if target is not None else extra.get("target")
        loss_fn = loss_fn if loss_fn is not None else extra.get("loss_fn")
        optimizer = optimizer if optimizer is not None else extra.get("optimizer")
        spec = spec_source.input_spec or spec_source.spec.default_input_spec()
        batch = (example.batch_size() if example is not None and spec is None else None) or \
            (spec_source.default_batch_sizes()[-1] if spec is not None else 1)
        source: SpecSource | ModuleSource = spec_source
    else:
        if not isinstance(model, nn.Module):
            raise UsageError(f"model must be an nn.Module or a spec string, got {type(model).__name__}")
        if inputs is None:
            raise UsageError("inputs is required with an nn.Module: a tensor or a tuple of tensors")
        coerced = Inputs.coerce(inputs)
        source, module, batch = ModuleSource(model, coerced, type(model).__name__), model, coerced.batch_size() or 1
    target_spec: InputSpec | None = None
    if isinstance(target, str):
        target_spec, target = parse_input_spec(target), None
        if len(target_spec.tensors) != 1:
            raise UsageError(f"--target: expected one tensor spec such as 'int64[B]{{0,10}}', got {target_spec}")
    elif target is not None and not isinstance(target, torch.Tensor):
        raise UsageError(f"target must be a tensor or a spec string such as 'int64[B]{{0,10}}', "
                         f"got {type(target).__name__}")
    has_target = target is not None or target_spec is not None
    if optimizer is None:
        spec_opt = OptimizerSpec.named("adamw", lr=1e-3)
    elif isinstance(optimizer, OptimizerSpec):
        spec_opt = optimizer
    else:
        spec_opt = OptimizerSpec.from_factory(optimizer, module)
    return source, Problem(spec_opt, LossSpec.of(loss_fn, has_target), target, target_spec), batch


def _factory_extras(source: SpecSource) -> dict[str, Any]:
    """(model, inputs, target, loss_fn, optimizer_factory) from a factory that returns them."""
    if source.spec.kind == "zoo":
        return {}
    from pitstop.models.spec import seed_everything

    seed_everything(source.seed)
    value = source.spec.resolve()()
    if not isinstance(value, tuple | list) or len(value) <= 2:
        return {}
    names = ("target", "loss_fn", "optimizer")
    return {n: v for n, v in zip(names, value[2:], strict=False)}


def _device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {device}: CUDA is not available here; use --device cpu")
    return device


def _json_sink(json_path: str | None) -> Callable[[TrainReport], None] | None:
    if not json_path:
        return None
    from pitstop._io import check_writable, write_atomic

    check_writable(json_path)
    return lambda report: write_atomic(json_path, report.to_dict())


def _check_dir(path: str) -> None:
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"--save: {path!r} is a file; give a directory such as out/")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--save: cannot create {path!r} ({exc.strerror}); choose a writable directory") from None
