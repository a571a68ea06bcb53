"""``pitstop.optimize``: search, decide, write the recipe, apply it here."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop._env import environment
from pitstop._settings import with_options
from pitstop.bench.fidelity import load_metric
from pitstop.bench.variants.handlers import Target, recipe_source
from pitstop.engine.source import Source, SpecSource, make_source
from pitstop.errors import ModelRunError
from pitstop.optimize.recipe import full_recipe, run_recipe, write_recipe_files
from pitstop.optimize.result import OptimizedModel, OptimizeReport
from pitstop.optimize.search import Search, SearchOutcome
from pitstop.optimize.settings import OptimizeSettings


def optimize(
    model: nn.Module | str,
    example_inputs: Any = None,
    *,
    settings: OptimizeSettings | None = None,
    save: str | Path | None = None,
    json_path: Any = None,  # a path, or a pitstop._io.ResultFile
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
    **options: Any,
) -> OptimizedModel:
    """Find the fastest way to run ``model`` here without changing its answers, and apply it.

    Probes every technique (precision, compile, int8, channels_last, threads, ONNX Runtime) on
    top of ``eval+inference_mode``, combines the ones that help, measures the finalists
    interleaved and keeps the fastest whose speed-up interval excludes 1 (else the start point).
    ``options`` are ``OptimizeSettings`` fields, applied over ``settings``: ``objective``,
    ``batch_size``, ``batch_sizes``, ``latency_budget_ms``, ``time_budget_s``, ``techniques``,
    ``tolerance``, ``threads``, ``device``, ``seed``, ``replicas``, ``isolate``, ``timeout_s``,
    ``worker_env``, ``fidelity_samples``, ``fidelity_inputs``, ``metric``, ``metric_tolerance``.
    ``objective="throughput"`` (or a ``latency_budget_ms``) also sweeps ``batch_sizes``.
    ``tolerance`` overrides the relative-error limits (fp32 1e-4, reduced precision 2e-2).
    Fidelity is measured on ``fidelity_samples`` rows (default 128, in batches shaped like the
    timing batch, drawn from the input spec) or on ``fidelity_inputs`` (your own batch); argmax
    flips between near-tied logits are excused. ``metric="file.py:fn"`` (``fn(model) -> score``,
    higher is better, on your own data) decides instead: a candidate is admitted when its score is
    at most ``metric_tolerance`` (default 0.01) below the fp32 model's. Returns an
    ``OptimizedModel``: call it like the model; ``.report`` and ``.recipe`` explain it; ``save``
    writes recipe.py, recipe.json (and model.onnx) there."""
    settings = with_options(OptimizeSettings, settings, options, "optimize")
    source, report, sink = run_search(model, example_inputs, settings, json_path=json_path, on_event=on_event)
    if report.outcome.interrupted:
        raise KeyboardInterrupt  # the partial report is in json_path
    if report.outcome.failed:
        raise ModelRunError(f"optimize {report.model}: {report.outcome.verdict}")
    return apply_report(source, report, save, sink)


def run_search(model: nn.Module | str, example_inputs: Any, settings: OptimizeSettings, *,
               json_path: Any = None, on_event: Callable[[str, dict[str, Any]], None] | None = None,
               ) -> tuple[Source, OptimizeReport, Callable[[OptimizeReport], None] | None]:
    """The search alone (the CLI prints its report even when interrupted)."""
    source = make_source(model, example_inputs, settings.seed)
    settings = settings.resolved(source)
    if settings.metric:
        load_metric(settings.metric)  # a missing function fails now, not after the probe
    sink = _json_sink(json_path)
    env = environment(settings.resolved_threads, settings.seed)
    env["device"] = settings.device
    report_of = _reporter(source, settings, env)
    search = Search(source, settings, env, on_event=on_event,
                    on_stage=(lambda outcome: sink(report_of(outcome, None))) if sink else None)
    outcome = search.run()
    env["isolation"] = search.group.isolation
    report = report_of(outcome, search.group.target)
    if sink:
        sink(report)
    return source, report, sink


def _reporter(source: Source, settings: OptimizeSettings, env: dict[str, Any]
              ) -> Callable[[SearchOutcome, Target | None], OptimizeReport]:
    threads, batch = settings.resolved_threads, settings.search_batch
    from pitstop.engine.fingerprint import spec_fingerprint

    measured_on = spec_fingerprint(source.spec) if isinstance(source, SpecSource) else None  # before the run
    if measured_on:
        env["model_fingerprint"] = measured_on

    def report_of(outcome: SearchOutcome, target: Target | None) -> OptimizeReport:
        recipe = ""
        config = outcome.winner_config
        if target is not None and not outcome.failed:  # a failed start point: no recipe to offer
            header = (f"pitstop recipe for {source.name}: {config.name} "
                      f"(batch {batch}, {threads} threads, {settings.device})")
            recipe = full_recipe(config, target, config.threads or threads, source, batch, header, measured_on)
        return OptimizeReport(
            model=source.name, settings=settings.to_dict(),
            environment=env, outcome=outcome, recipe=recipe,
            claims_key=source.spec.text if isinstance(source, SpecSource) else None)

    return report_of


def _json_sink(json_path: Any) -> Callable[[OptimizeReport], None] | None:
    if not json_path:
        return None
    from pitstop._io import result_file

    out = result_file(json_path)  # checked now, before minutes of measuring

    def sink(report: OptimizeReport) -> None:
        out.write(report.to_dict())  # a run with no results keeps the old file; a partial one a good file

    return sink


def apply_report(source: Source, report: OptimizeReport, save: str | Path | None,
                 sink: Callable[[OptimizeReport], None] | None) -> OptimizedModel:
    """Apply the recipe in this process, from the saved recipe.py when saving (ONNX lands there)."""
    module, inputs = source.materialize(report.settings["batch_size"])
    threads_before = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="pitstop-recipe-") as tmp:
        staging = Path(tmp)  # the recipe runs here (its ONNX graphs land here); then the folder is saved whole
        if save is not None:
            _reuse_graphs(Path(save), staging)
        try:
            fast = run_recipe(report.recipe or _bare(report), staging / "recipe.py", module,
                              inputs.args, inputs.kwargs)
        finally:
            if report.config.threads is None:
                torch.set_num_threads(threads_before)
        if save is not None:
            report.saved = write_recipe_files(report, Path(save), ran_in=staging)
    if sink:
        sink(report)
    return OptimizedModel(fast, report)


def _reuse_graphs(saved: Path, staging: Path) -> None:
    """ONNX graphs of an earlier save: the recipe reuses them when their fingerprint matches (else
    it exports again), as it would running in that folder."""
    import shutil

    if saved.is_dir():
        for graph in saved.glob("model*.onnx*"):
            shutil.copyfile(graph, staging / graph.name)


def _bare(report: OptimizeReport) -> str:
    return recipe_source(report.config, Target(), report.settings["threads"])
