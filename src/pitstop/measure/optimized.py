"""Values of an optimize run: the report (every stage's rows, the winner, the choice of batch
size) and the ``OptimizedModel`` that applies the winning recipe in this process.

Rendering lives in ``pitstop.report`` (imported lazily by the convenience methods)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from pitstop.measure.measurement import BenchResult, Measurement
from pitstop.measure.search import START, SearchOutcome, Stage
from pitstop.measure.stats import Ratio
from pitstop.measure.variants import VariantConfig


@dataclass
class Choice:
    """The (config, batch size) the objective picks, with its measured latency and throughput."""

    row: Measurement
    stage: str
    reason: str


@dataclass
class OptimizeReport:
    """Everything optimize measured and decided."""

    model: str
    settings: dict[str, Any]
    environment: dict[str, Any]
    outcome: SearchOutcome
    recipe: str
    claims_key: str | None = None
    saved: list[str] = field(default_factory=list)

    @property
    def stages(self) -> list[Stage]:
        return self.outcome.stages

    @property
    def config(self) -> VariantConfig:
        """The chosen config (the start point when nothing beat it)."""
        return self.outcome.winner_config

    @property
    def speedup(self) -> Ratio | None:
        """The winner's speed-up over the start point, measured alongside it."""
        return self.speedup_over(START.name)

    def speedup_over(self, baseline: str) -> Ratio | None:
        """The winner's speed-up over ``baseline`` where both ran in the winner's stage."""
        winner, stage = self.outcome.winner, self.outcome.winner_stage
        if winner is None or stage is None:
            return None
        comparison = stage.result.comparison(winner.variant, winner.batch_size, baseline=baseline)
        return comparison.ratio if comparison else None

    def reference_stage(self) -> BenchResult | None:
        """The stage that measured the grad-mode references (where published claims are checked)."""
        return next((s.result for s in self.stages if s.result.row("eval+grad", self.settings["batch_size"])),
                    None)

    def candidates(self) -> list[tuple[Stage, Measurement]]:
        """Each variant once at the search batch size: its row from the last stage that ran it."""
        latest: dict[str, tuple[Stage, Measurement]] = {}
        batch = self.settings["batch_size"]
        for stage in self.stages:
            if stage.name == "sweep":
                continue
            for row in stage.rows:
                if row.batch_size == batch and (row.variant not in latest or row.status != "skipped"):
                    latest[row.variant] = (stage, row)
        return list(latest.values())

    def sweep(self) -> list[tuple[Stage, Measurement]]:
        """Rows of the start point and the winner at every batch size measured (latency vs throughput)."""
        keep = {START.name, self.config.name}
        found: dict[tuple[str, int], tuple[Stage, Measurement]] = {}
        for stage in self.stages:
            for row in stage.rows:
                if row.variant in keep and row.measured:
                    found[(row.variant, row.batch_size)] = (stage, row)
        return sorted(found.values(), key=lambda p: (p[1].batch_size, p[1].variant != START.name))

    def choice(self) -> Choice | None:
        """The objective's pick: the winner at the search batch (latency), or the batch size with
        the most samples/s (throughput), with p90 latency under the budget if one is set."""
        rows = [(s, r) for s, r in self.sweep() if r.variant == self.config.name and r.status == "ok"]
        if not rows:
            return None
        objective, budget = self.settings["objective"], self.settings.get("latency_budget_ms")
        if budget is not None:
            rows = [(s, r) for s, r in rows if r.latency and r.latency.p90 <= budget]
            if not rows:
                return None
        if objective == "latency" and budget is None:
            batch = self.settings["batch_size"]
            stage, row = next(((s, r) for s, r in rows if r.batch_size == batch), rows[0])
            return Choice(row, stage.name, f"lowest latency at batch {batch}")
        stage, row = max(rows, key=lambda p: p[1].throughput or 0.0)
        why = "most samples/s" + (f" with p90 under {budget:g} ms" if budget is not None else "")
        return Choice(row, stage.name, why)

    def break_even_calls(self, row: Measurement, stage: Stage) -> float | None:
        """Calls after which a compiled / exported variant has paid back its preparation time."""
        start = stage.result.row(START.name, row.batch_size)
        if row.compile_s is None or not (start and start.latency and row.latency):
            return None
        saved_s = (start.latency.median - row.latency.median) / 1e3
        return row.compile_s / saved_s if saved_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (PRODUCT.md schema, kind ``optimize``)."""
        from pitstop.report.optimize import optimize_document

        return optimize_document(self)

    def to_json(self, indent: int | None = 2) -> str:
        """The JSON document as text."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def table(self) -> str:
        """The plain-text report."""
        from pitstop.report.optimize import render_text

        return render_text(self)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        from pitstop.report.pages import bench_html

        return bench_html(self.to_dict(), fragment=True)


class OptimizedModel(nn.Module):
    """The user's model with the chosen recipe applied; ``.report`` and ``.recipe`` tell why and how."""

    def __init__(self, fast: nn.Module, report: OptimizeReport) -> None:
        super().__init__()
        self.fast = fast
        self.report = report
        self.recipe = report.recipe
        self.config = report.config

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the model the chosen way."""
        return self.fast(*args, **kwargs)

    def save(self, directory: str | Path) -> list[str]:
        """Write recipe.py and recipe.json (the report's) into ``directory``."""
        from pitstop.measure.recipe_files import write_recipe_files

        return write_recipe_files(self.report, Path(directory))
