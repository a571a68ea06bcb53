"""``pitstop.train``: search the training-step techniques, decide, write the recipe, hand back a
``TrainSetup`` that applies it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop._env import environment
from pitstop._settings import with_options
from pitstop.engine.source import ModuleSource, SpecSource, make_source, resolve_device
from pitstop.errors import ReferenceFailed, SettingError
from pitstop.models.inputs import parse_input_spec
from pitstop.train.problem import LossSpec, OptimizerSpec, ProblemRequest
from pitstop.train.recipe import full_recipe, write_recipe_files
from pitstop.train.result import TrainReport, TrainSetup
from pitstop.train.search import TrainOutcome, TrainSearch
from pitstop.train.settings import AXES, TECHNIQUES, TrainSettings

OptimizerFactory = Callable[[Any], torch.optim.Optimizer]


def train(model: nn.Module | str, inputs: Any = None, target: Any = None, *, loss_fn: Any = None,
          optimizer: OptimizerFactory | OptimizerSpec | None = None, settings: TrainSettings | None = None,
          save: str | Path | None = None, **options: Any) -> TrainSetup:
    """Find the fastest training step for ``model`` here that still trains the same, and return it.

    ``inputs``: a tensor, a tuple of tensors (``model(*inputs)``), a dict (``model(**inputs)``) or
    a tuple ending in a dict (both). The loss: ``loss_fn(output, target)`` when given (a torch.nn
    loss module, or a function defined at the top level of a module or of your model file); else
    the model's own (``output.loss``, ``output["loss"]``, a scalar in an output tuple such as
    nanoGPT's ``(logits, loss)``; HF models compute it from a ``labels`` input); else the output
    itself when it is a scalar; else cross-entropy on the logits against ``target``. A model with
    none of these and no target is a usage error. ``optimizer`` builds the optimizer from
    ``model.parameters()`` (or from the model, when its first parameter is named ``model``: named
    parameter groups are reproduced exactly); default AdamW, lr 1e-3; its foreach/fused flags are
    pitstop's to vary. ``model`` may be a spec string (``"zoo:cnn"``) with an input spec and
    ``target`` a spec such as ``"int64[B]{0,10}"``. ``options`` are ``TrainSettings`` fields,
    applied over ``settings``: ``batch_size``, ``batch_dim`` (1 for sequence-first batches),
    ``threads``, ``device``, ``seed``, ``steps`` (the planned run length: compilation must pay for
    itself), ``trajectory_steps``, ``tolerance``, ``replicas``, ``isolate``, ``timeout_s``,
    ``worker_env``, ``techniques`` (``TECHNIQUES``; ``AXIS=OPTION`` narrows one); ``memory_budget_mb``,
    ``save`` (a directory for recipe.py, written whole), ``json_path``, ``on_event``, ``time_budget_s``
    (default 300). Returns a ``TrainSetup``:
    ``model, optimizer, step = setup.apply(model)``; ``setup.report``; ``setup.recipe``. Raises
    ``ReferenceFailed`` when the fp32 reference itself fails (nothing is recommended or saved)."""
    report = run_train(model, inputs, target, loss_fn=loss_fn, optimizer=optimizer, settings=settings, save=save,
                       **options)
    if report.outcome.interrupted:
        raise KeyboardInterrupt  # the partial report is in json_path
    if report.outcome.failed:
        raise ReferenceFailed(f"train {report.model}: {report.outcome.verdict}")
    return TrainSetup(report)


def run_train(model: nn.Module | str, inputs: Any = None, target: Any = None, *, loss_fn: Any = None,
              optimizer: OptimizerFactory | OptimizerSpec | None = None, settings: TrainSettings | None = None,
              save: str | Path | None = None, **options: Any) -> TrainReport:
    """The search alone, returning the report (the CLI prints it even when interrupted or failed).
    Besides ``TrainSettings`` fields, ``options`` take ``json_path``, ``on_event``, ``techniques``,
    ``memory_budget_mb``."""
    json_path, on_event = options.pop("json_path", None), options.pop("on_event", None)
    resolved = _settings(settings, options)
    source = make_source(model, inputs, resolved.seed)
    request = _request(source, target, loss_fn, optimizer)
    out = _result_file(json_path)
    folder = _save_folder(save)
    env = environment(resolved.threads, resolved.seed)
    env["device"] = resolved.device
    search = TrainSearch(source, resolved, request, env, on_event=on_event,
                         on_stage=(lambda o: out.write(_report(search, o).to_dict())) if out else None)
    outcome = search.run()
    env["isolation"] = search.group.isolation
    report = _report(search, outcome, with_recipe=True)
    if folder is not None and not outcome.interrupted and not outcome.failed and report.recipe:
        report.saved = write_recipe_files(report, folder)
    if out:
        out.write(report.to_dict())
    return report


def settings_from(options: dict[str, Any], settings: TrainSettings | None = None) -> TrainSettings:
    """``TrainSettings`` from options as the API takes them (``TrainSettings`` fields, ``techniques``,
    ``memory_budget_mb`` in MiB, ``device`` resolved), over ``settings``: what the CLI builds too."""
    return _settings(settings, dict(options))


def _settings(settings: TrainSettings | None, options: dict[str, Any]) -> TrainSettings:
    """The settings: ``options`` over ``settings``, the memory budget (``memory_budget_mb``) folded in."""
    techniques, memory_budget_mb = options.pop("techniques", None), options.pop("memory_budget_mb", None)
    extra: dict[str, Any] = {}
    if techniques is not None:
        extra["techniques"] = tuple(techniques)
    if memory_budget_mb is not None:
        if not isinstance(memory_budget_mb, int | float) or not 0 < memory_budget_mb < 2**43:  # 8 EiB in bytes
            raise SettingError("memory_budget_mb", f"must be a positive number of MiB below 2**43 (8 EiB), "
                                                   f"got {memory_budget_mb!r}")
        extra["memory_budget_bytes"] = int(memory_budget_mb * 2**20)
    if "device" in options:
        options = {**options, "device": resolve_device(options["device"])}
    return with_options(TrainSettings, settings, {**options, **extra}, "train")


def _request(source: SpecSource | ModuleSource, target: Any, loss_fn: Any, optimizer: Any) -> ProblemRequest:
    """What the user asked for, as data (the model itself is looked at in a worker)."""
    target_spec = None
    if isinstance(target, str):
        spec = parse_input_spec(target, "target")
        if len(spec.tensors) != 1 or spec.tensors[0].name:
            raise SettingError("target", f"expected one tensor spec such as 'int64[B]{{0,10}}', got {target!r}")
        target_spec, target = target, None
    elif target is not None and not isinstance(target, torch.Tensor):
        raise SettingError("target", "expected a tensor or a spec string such as 'int64[B]{0,10}', "
                                     f"got {type(target).__name__}")
    if target is not None and isinstance(source, SpecSource):
        raise SettingError("target", "with a model spec string, give the target as a spec string such as "
                                     "'int64[B]{0,10}' (or return it from the factory)")
    spec_opt = optimizer if isinstance(optimizer, OptimizerSpec) or optimizer is None else \
        _from_factory(optimizer, source)
    loss = LossSpec.of(loss_fn, target is not None or target_spec is not None) if loss_fn is not None else None
    return ProblemRequest(spec_opt, loss, target, target_spec)


def _from_factory(optimizer: Any, source: SpecSource | ModuleSource) -> OptimizerSpec:
    """An optimizer factory read on the API's module (the user's own object, in the user's process)."""
    if not isinstance(source, ModuleSource):
        raise SettingError("optimizer", "with a model spec string, name the optimizer (OptimizerSpec.named('adamw', "
                                        "lr=1e-3)) or return a factory from the model's factory")
    return OptimizerSpec.from_factory(optimizer, source.module)


def _result_file(json_path: Any) -> Any:
    if not json_path:
        return None
    from pitstop._io import result_file

    return result_file(json_path)


def _save_folder(save: str | Path | None) -> Path | None:
    if save is None:
        return None
    from pitstop._io import check_folder

    return check_folder(save)


def _report(search: TrainSearch, outcome: TrainOutcome, with_recipe: bool = False) -> TrainReport:
    s, group = search.settings, search.group
    recipe = ""
    if with_recipe and group.prepared and not outcome.failed:
        config = outcome.winner_config
        header = (f"pitstop training recipe for {search.source.name}: {config.name} (batch {s.batch_size}, "
                  f"{config.threads or s.threads} threads, {s.device})")
        recipe = full_recipe(group.recipe(config, header), search.source, s.batch_size or 1, group.info)
    problem = {"optimizer": group.problem.optimizer.to_dict(), "loss": group.problem.loss.to_dict(),
               "has_target": bool(group.info.get("has_target")), "inputs": group.info.get("inputs"),
               "fingerprint": group.info.get("fingerprint"), "flops_per_step": group.info.get("flops_per_step"),
               "peaks": group.info.get("peaks") or {}} if group.prepared else {}
    return TrainReport(search.source.name, s.to_dict(), search.env, outcome, recipe, problem)


__all__ = ["AXES", "TECHNIQUES", "run_train", "settings_from", "train"]
