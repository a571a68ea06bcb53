"""``pitstop.optimize``: search, decide, write the recipe, apply it here."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop._env import environment, physical_cores
from pitstop.bench.api import _device, _source
from pitstop.bench.group import Source
from pitstop.bench.runner import BenchSettings
from pitstop.bench.timer import TimingPolicy
from pitstop.bench.variants.handlers import Target
from pitstop.optimize.recipe import full_recipe, run_recipe, write_recipe_files
from pitstop.optimize.result import OptimizedModel, OptimizeReport
from pitstop.optimize.search import AXES, START, Objective, Search, SearchOutcome, SearchSettings


def optimize(
    model: nn.Module | str,
    example_inputs: Any = None,
    *,
    objective: Objective = "latency",
    batch_size: int | None = None,
    batch_sizes: Sequence[int] | None = None,
    latency_budget_ms: float | None = None,
    time_budget_s: float = 300.0,
    techniques: Sequence[str] = AXES,
    tolerance: float | None = None,
    threads: int | None = None,
    device: str = "cpu",
    seed: int = 0,
    replicas: int = 2,
    isolate: bool = True,
    timeout_s: float = 300.0,
    save: str | Path | None = None,
    json_path: str | None = None,
    worker_env: dict[str, str] | None = None,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> OptimizedModel:
    """Find the fastest way to run ``model`` here without changing its answers, and apply it.

    Probes every technique (precision, compile, int8, channels_last, threads, ONNX Runtime) on
    top of ``eval+inference_mode``, combines the ones that help, measures the finalists
    interleaved and keeps the fastest whose speed-up interval excludes 1 (else the start point).
    ``objective="throughput"`` (or a ``latency_budget_ms``) also sweeps ``batch_sizes``.
    ``tolerance`` overrides the relative-error limits (fp32 1e-4, reduced precision 2e-2).
    Returns an ``OptimizedModel``: call it like the model; ``.report`` and ``.recipe`` explain it;
    ``save`` writes recipe.py, recipe.json (and model.onnx) there."""
    source, report, sink = run_search(
        model, example_inputs, objective=objective, batch_size=batch_size, batch_sizes=batch_sizes,
        latency_budget_ms=latency_budget_ms, time_budget_s=time_budget_s, techniques=techniques,
        tolerance=tolerance, threads=threads, device=device, seed=seed, replicas=replicas, isolate=isolate,
        timeout_s=timeout_s, json_path=json_path, worker_env=worker_env, on_event=on_event)
    if report.outcome.interrupted:
        raise KeyboardInterrupt  # the partial report is in json_path
    return apply_report(source, report, save, sink)


def run_search(model: nn.Module | str, example_inputs: Any, *, objective: Objective, batch_size: int | None,
               batch_sizes: Sequence[int] | None, latency_budget_ms: float | None, time_budget_s: float,
               techniques: Sequence[str], tolerance: float | None, threads: int | None, device: str, seed: int,
               replicas: int, isolate: bool, timeout_s: float, json_path: str | None,
               worker_env: dict[str, str] | None,
               on_event: Callable[[str, dict[str, Any]], None] | None,
               ) -> tuple[Source, OptimizeReport, Callable[[OptimizeReport], None] | None]:
    """The search alone (the CLI prints its report even when interrupted)."""
    source = _source(model, example_inputs, seed)
    settings = _settings(source, objective, batch_size, batch_sizes, latency_budget_ms, time_budget_s,
                         techniques, tolerance, threads, _device(device), seed, replicas, isolate, worker_env,
                         timeout_s)
    sink = _json_sink(json_path)
    env = environment(settings.bench.threads, seed)
    env["device"] = settings.bench.device
    report_of = _reporter(source, settings, env)
    search = Search(source, settings, env, on_event=on_event,
                    on_stage=(lambda outcome: sink(report_of(outcome, None))) if sink else None)
    outcome = search.run()
    env["isolation"] = search.group.isolation
    report = report_of(outcome, search.group.target)
    if sink:
        sink(report)
    return source, report, sink


def _settings(source: Source, objective: Objective, batch_size: int | None, batch_sizes: Sequence[int] | None,
              latency_budget_ms: float | None, time_budget_s: float, techniques: Sequence[str],
              tolerance: float | None, threads: int | None, device: str, seed: int, replicas: int,
              isolate: bool, worker_env: dict[str, str] | None, timeout_s: float) -> SearchSettings:
    defaults = tuple(batch_sizes or source.default_batch_sizes())
    wants_sweep = objective == "throughput" or latency_budget_ms is not None
    search_batch = batch_size or (max(defaults) if wants_sweep else min(defaults))
    bench = BenchSettings(
        batch_sizes=(search_batch,), threads=threads or physical_cores(), variants=(START,),
        policy=TimingPolicy(), device=device, seed=seed, isolate=isolate, replicas=replicas, timeout_s=timeout_s,
        rel_tol=tolerance if tolerance is not None else 1e-4,
        reduced_tol=tolerance if tolerance is not None else 2e-2,
        worker_env=tuple(sorted((worker_env or {}).items())),
    )
    sweep = tuple(sorted(set(defaults) | {search_batch})) if wants_sweep else tuple(batch_sizes or ())
    return SearchSettings(bench, search_batch, objective, latency_budget_ms, time_budget_s,
                          tuple(techniques), sweep=sweep)


def _reporter(source: Source, settings: SearchSettings, env: dict[str, Any]
              ) -> Callable[[SearchOutcome, Target | None], OptimizeReport]:
    def report_of(outcome: SearchOutcome, target: Target | None) -> OptimizeReport:
        recipe = ""
        if target is not None:
            header = (f"pitstop recipe for {source.name}: {outcome.winner_config.name} "
                      f"(batch {settings.batch_size}, {settings.bench.threads} threads, {settings.bench.device})")
            threads = outcome.winner_config.threads or settings.bench.threads
            recipe = full_recipe(outcome.winner_config, target, threads, source,
                                 settings.batch_size, header)
        return OptimizeReport(
            model=source.name, settings={**settings.to_dict(), **settings.bench.to_dict(),
                                         "batch_size": settings.batch_size},
            environment=env, outcome=outcome, recipe=recipe,
            claims_key=source.spec.text if hasattr(source, "spec") else None)

    return report_of


def _json_sink(json_path: str | None) -> Callable[[OptimizeReport], None] | None:
    if not json_path:
        return None
    from pitstop._io import check_writable, write_atomic

    check_writable(json_path)  # before minutes of measuring, not after
    return lambda report: write_atomic(json_path, report.to_dict())


def apply_report(source: Source, report: OptimizeReport, save: str | Path | None,
                 sink: Callable[[OptimizeReport], None] | None) -> OptimizedModel:
    """Apply the recipe in this process, from the saved recipe.py when saving (ONNX lands there)."""
    module, inputs = source.materialize(report.settings["batch_size"])
    threads_before = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="pitstop-recipe-") as tmp:
        directory = Path(save) if save is not None else Path(tmp)
        if save is not None:
            report.saved = write_recipe_files(report, directory)
        try:
            fast = run_recipe(report.recipe or _bare(report), directory / "recipe.py", module,
                              inputs.args, inputs.kwargs)
        finally:
            if report.config.threads is None:
                torch.set_num_threads(threads_before)
        if save is not None:
            report.saved = write_recipe_files(report, directory)  # now with model.onnx, if any
    if sink:
        sink(report)
    return OptimizedModel(fast, report)


def _bare(report: OptimizeReport) -> str:
    from pitstop.bench.variants.handlers import recipe_source

    return recipe_source(report.config, Target(), report.settings["threads"])
