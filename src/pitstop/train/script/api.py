"""``pitstop train SCRIPT ARGS``: the search on the user's script, and the winner as a patch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pitstop._env import environment
from pitstop.train.config import NAIVE
from pitstop.train.result import TrainReport
from pitstop.train.script.group import ScriptGroup, ScriptSource
from pitstop.train.search import TrainOutcome, TrainSearch
from pitstop.train.settings import TrainSettings


def train_script(script: str, args: list[str], settings: TrainSettings, *, json_path: Any = None,
                 patch: str | Path | None = None, on_event: Callable[[str, dict[str, Any]], None] | None = None
                 ) -> TrainReport:
    """Measure the training-step techniques inside ``script`` (run with ``args``) and return the report;
    ``patch`` writes the winner's unified diff (not when nothing wins, fails or is interrupted)."""
    from pitstop._io import check_writable, result_file, write_text_atomic

    out = result_file(json_path) if json_path else None
    if patch is not None:
        check_writable(patch, "patch", "patch")
    source = ScriptSource(script, list(args))
    group = ScriptGroup(source, settings, on_event)
    env = environment(settings.threads, settings.seed)
    env["device"] = settings.device
    search = TrainSearch(source, settings, None, env, on_event=on_event, group=group,
                         on_stage=(lambda o: _write(out, script_report(search, o))) if out else None)
    outcome = search.run()
    env["isolation"] = "process (the script's child)"
    report = script_report(search, outcome)
    if patch is not None and report.recipe and not outcome.interrupted and not outcome.failed:
        write_text_atomic(patch, report.recipe)
        report.saved = [str(patch)]
    if out:
        out.write(report.to_dict())
    return report


def script_report(search: TrainSearch, outcome: TrainOutcome) -> TrainReport:
    """The report of a script search: the winner's recipe is its patch; ``script`` says what was found."""
    group: ScriptGroup = search.group
    s = search.settings
    recipe, changes = "", []
    if group.prepared and not outcome.failed:
        config = outcome.winner_config
        if config != NAIVE:
            recipe = group.recipe(config)
            changes = [c.describe(group.root) for c in group.changes(config)]
    found = group.found
    script = {"script": group.script.script, "args": group.script.args, "kind": group.info.get("kind"),
              "root": getattr(group, "root", None), "changes": changes, "sites": found.get("sites"),
              "trainers": found.get("trainers"), "flops_per_step": found.get("flops_per_step"),
              "peaks": (found.get("peaks") or {}).get("peak_flops"), "clock": found.get("clock"),
              "optimizers": found.get("optimizers")} if group.prepared else {}
    if script:
        script["run_length"] = found.get("run_length")
        script["input_wait"] = input_wait(outcome)
    problem = group.problem_doc if group.prepared else {}
    report = TrainReport(group.script.name, s.to_dict(), search.env, outcome, recipe, problem)
    report.script = script
    return report


def input_wait(outcome: TrainOutcome) -> dict[str, Any] | None:
    """The step's input wait (seconds in a DataLoader iterator's ``__next__``, the profile's data
    phase) for naive and the winner, in the last stage: ``{variant: {"ms", "step_ms", "share"}}``;
    None when no batch came from a DataLoader."""
    import itertools
    import statistics

    stage = outcome.winner_stage or (outcome.stages[-1] if outcome.stages else None)
    if stage is None:
        return None
    wanted = {NAIVE.name, outcome.winner.variant if outcome.winner else NAIVE.name}
    out = {}
    for row in stage.rows:
        samples = list(itertools.chain(*((row.details or {}).get("data_samples_s") or [])))
        if row.variant in wanted and samples and row.latency and any(samples):
            ms = statistics.median(samples) * 1e3
            out[row.variant] = {"ms": ms, "step_ms": row.latency.median, "share": min(ms / row.latency.median, 1.0)}
    return out or None


def _write(out: Any, report: TrainReport) -> None:
    out.write(report.to_dict())
