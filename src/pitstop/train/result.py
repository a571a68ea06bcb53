"""Values of a train run: the report (every stage's rows with their fidelity, the winner, the
recipe) and the ``TrainSetup`` that applies the winning recipe in this process. JSON kind
``train``; rows are shaped like bench rows (``latency_ms`` is per training step), so
``pitstop compare`` reads them. Rendering lives in ``pitstop.report``, which takes the document."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from pitstop._document import envelope
from pitstop.engine.measurement import Measurement
from pitstop.engine.result import Rows, row_document
from pitstop.engine.stages import StagedReport
from pitstop.stats import Ratio, speedup_groups
from pitstop.train.config import NAIVE_NAME, TrainConfig
from pitstop.train.search import Stage, TrainOutcome


@dataclass
class TrainReport(StagedReport):
    """Everything train measured and decided."""

    BASELINE: ClassVar[str] = NAIVE_NAME

    model: str
    settings: dict[str, Any]
    environment: dict[str, Any]
    outcome: TrainOutcome
    recipe: str
    problem: dict[str, Any] = field(default_factory=dict)  # optimizer and loss, as run
    saved: list[str] = field(default_factory=list)
    script: dict[str, Any] = field(default_factory=dict)  # script mode: the script, what was found, the changes

    def flops(self) -> tuple[float | None, dict[str, float]]:
        """FLOPs of one training step and this machine's matmul peaks, when they were measured."""
        where = self.script or self.problem
        return where.get("flops_per_step"), where.get("peaks") or {}

    @property
    def config(self) -> TrainConfig:
        """The chosen config (naive when nothing beat it)."""
        return self.outcome.winner_config

    def speedup_over(self, baseline: str) -> Ratio | None:
        """The winner's speed-up as the search judged it (``TrainSearch.ratio``): by wall time, or, where
        the winner's stage ran on a busy machine, by CPU time per step, which other processes do not move."""
        winner, stage = self.outcome.winner, self.outcome.winner_stage
        if self.by_cpu:
            base = stage.result.row(baseline, winner.batch_size)  # type: ignore[union-attr]
            a, b = ((r.details or {}).get("cpu_samples_s") for r in (base, winner)) if base and winner else (None, None)
            if a and b and any(a) and any(b):
                return speedup_groups([g for g in a if g], [g for g in b if g])
        return super().speedup_over(baseline)

    @property
    def by_cpu(self) -> bool:
        """The winner was judged by CPU time: its stage found the machine busy."""
        stage = self.outcome.winner_stage
        return self.outcome.winner is not None and stage is not None and bool((stage.load or {}).get("busy"))

    def break_even(self, row: Measurement, stage: Stage) -> float | None:
        """Steps after which a variant's one-time cost (compilation, a loader's worker start-up:
        ``one_time_s`` in its details, set when the winner is chosen) has paid back against naive."""
        once = (row.details or {}).get("one_time_s")
        base = stage.result.row(self.BASELINE, row.batch_size)
        if once is None or not (base and base.latency and row.latency):
            return super().break_even(row, stage)
        saved_s = (base.latency.median - row.latency.median) / 1e3
        return once / saved_s if saved_s > 0 else None

    def candidates(self) -> list[tuple[Stage, Measurement]]:
        """Each variant once: its row from the last stage that measured it."""
        return self.latest_rows()

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (kind ``train``)."""
        return train_document(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> TrainReport:
        """Rebuild a report from its JSON document (raw samples included), e.g. to render it again."""
        outcome = TrainOutcome(complete=doc["complete"], interrupted=doc["interrupted"],
                               elapsed_s=doc["search"]["elapsed_s"], notes=list(doc.get("notes", [])),
                               threads=doc["settings"]["threads"], failed=doc.get("failed") or "",
                               run_length=doc["search"].get("run_length") or {})
        for name in dict.fromkeys(r["stage"] for r in doc["results"]):
            rows = [r for r in doc["results"] if r["stage"] == name]
            result = Rows.from_dict({"model": doc["model"], "settings": {}, "environment": doc["environment"],
                                            "baseline": NAIVE_NAME, "complete": True, "interrupted": False,
                                            "results": rows})
            meta: dict[str, Any] = next((s for s in doc["search"]["stages"] if s["name"] == name), {})
            outcome.stages.append(Stage(name, result, meta.get("elapsed_s", 0.0), meta.get("load") or {}))
        win = doc.get("winner") or {}
        outcome.verdict = win.get("verdict", "")
        if win.get("stage") and outcome.stages:
            stage = next(s for s in outcome.stages if s.name == win["stage"])
            outcome.winner_stage = stage
            outcome.winner = stage.result.row(win["variant"], win["batch_size"])
        return cls(doc["model"], doc["settings"], doc["environment"], outcome, win.get("recipe", ""),
                   doc.get("problem", {}), doc.get("saved", []), doc.get("script") or {})


Step = Callable[[Any, Any], torch.Tensor]


class TrainSetup:
    """The chosen way to train: ``apply(model)`` -> ``(model, optimizer, step)`` where
    ``step(inputs, target)`` (inputs: a tensor or a tuple of them) runs one training step the
    measured way and returns the loss; ``.report`` says why, ``.recipe`` is the code that runs
    without pitstop."""

    def __init__(self, report: TrainReport) -> None:
        self.report = report
        self.recipe = report.recipe
        self.config = report.config

    def apply(self, model: nn.Module) -> tuple[nn.Module, torch.optim.Optimizer, Step]:
        """Set ``model`` up the chosen way (its parameters are trained in place)."""
        import tempfile

        from pitstop.engine.recipe import build

        with tempfile.TemporaryDirectory(prefix="pitstop-train-recipe-") as tmp:
            ns = build(self.recipe, Path(tmp) / "recipe.py", name="pitstop_train_applied")
        fast, optimizer = ns["apply"](model)
        train_step = ns["train_step"]

        def step(inputs: Any, target: torch.Tensor | None = None) -> torch.Tensor:
            args = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
            return train_step(fast, optimizer, (args, target))

        return fast, optimizer, step

    def save(self, directory: str | Path) -> list[str]:
        """Write recipe.py and recipe.json into ``directory``."""
        from pitstop.train.recipe import write_recipe_files

        self.report.saved = write_recipe_files(self.report, Path(directory))
        return self.report.saved

    def __repr__(self) -> str:
        return f"TrainSetup({self.config.name})"


def verdict_lines(report: TrainReport) -> list[str]:
    """The winner (or why naive stays), its speed-up, the search's time."""
    outcome = report.outcome
    took = f"search took {outcome.elapsed_s:.0f} s of a {report.settings['time_budget_s']:g} s budget"
    if not outcome.complete:
        took += "; interrupted: best so far" if outcome.interrupted else "; incomplete"
    lines = list(outcome.notes)
    winner, ratio = outcome.winner, report.speedup
    if outcome.failed:
        lines.append(f"Nothing recommended: {outcome.verdict}. ({took})")
    elif winner is None or ratio is None:
        lines.append(f"Winner: {NAIVE_NAME} stays: {outcome.verdict}. ({took})")
    else:
        even = report.break_even(winner, outcome.winner_stage) if outcome.winner_stage else None
        pays = f"; its one-time cost pays back after {even:,.0f} steps" if even is not None else ""
        base = "the unmodified script" if report.script else "fp32 eager, for-loop optimizer"
        # chosen on its optimizer step (winner.py), the whole step's interval may span 1: not "faster"
        than = "faster per step than" if ratio.ci95[0] > 1.0 else "per step, within noise of"
        cpu = " by CPU time (the machine was busy: wall time would mislead)" if report.by_cpu else ""
        lines.append(f"Winner: {winner.variant}: {ratio.median:.2f}x [{ratio.ci95[0]:.2f}-{ratio.ci95[1]:.2f}] "
                     f"{than} {NAIVE_NAME} ({base}){cpu}{pays} ({outcome.verdict}; {took})")
    if report.saved:
        lines.append(f"Saved: {', '.join(report.saved)}")
    return lines


def train_document(report: TrainReport) -> dict[str, Any]:
    """The JSON document: every stage's rows (with ``stage`` and ``break_even_steps``), the winner."""
    from pitstop.train.peaks import mfu

    results = []
    flops, peaks = report.flops()
    for stage in report.stages:
        for row in stage.rows:
            doc = {**row_document(stage.result, row), "stage": stage.name}
            even = report.break_even(row, stage)
            if even is not None:
                doc["break_even_steps"] = even
            used = mfu(flops, row.latency.median / 1e3 if row.latency else None,
                       str(row.config.get("precision", "fp32")), peaks)
            if used is not None:
                doc["mfu"] = used
            results.append(doc)
    winner, ratio, best = report.outcome.winner, report.speedup, report.outcome.winner_stage
    batch = report.settings["batch_size"] or 1
    return envelope(
        "train", report.environment, model=report.model, settings=report.settings, problem=report.problem,
        baseline=NAIVE_NAME, complete=report.outcome.complete, interrupted=report.outcome.interrupted,
        failed=report.outcome.failed or None, results=results,
        winner={"variant": report.config.name, "config": report.config.to_dict(report.settings["threads"]),
                "batch_size": batch, "stage": best.name if winner and best else None,
                "speedup": {"median": ratio.median, "ci95": list(ratio.ci95)} if ratio else None,
                "break_even_steps": report.break_even(winner, best) if winner and best else None,
                "verdict": report.outcome.verdict, "recipe": report.recipe},
        search={"elapsed_s": report.outcome.elapsed_s, "time_budget_s": report.settings["time_budget_s"],
                "stages": [{"name": s.name, "elapsed_s": s.elapsed_s, "variants": [r.variant for r in s.rows],
                            "load": s.load or None} for s in report.stages],
                "run_length": report.outcome.run_length or None},
        notes=report.outcome.notes, advice=verdict_lines(report)[-1] if report.stages else None,
        summary=verdict_lines(report),
        saved=report.saved, script=report.script or None,
    )
