"""Values of an optimize run: the report (every stage's rows, the winner, the choice of batch
size) and the ``OptimizedModel`` that applies the winning recipe in this process.

Rendering lives in ``pitstop.report``, which takes the JSON document (``to_dict()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from torch import nn

from pitstop._document import envelope
from pitstop.bench.variants.config import VariantConfig
from pitstop.engine.measurement import Measurement
from pitstop.engine.result import Rows, row_document
from pitstop.engine.stages import StagedReport
from pitstop.optimize.search import START, SearchOutcome, Stage


@dataclass
class Choice:
    """The (config, batch size) the objective picks, with its measured latency and throughput."""

    row: Measurement
    stage: str
    reason: str


@dataclass
class OptimizeReport(StagedReport):
    """Everything optimize measured and decided."""

    BASELINE: ClassVar[str] = START.name

    model: str
    settings: dict[str, Any]
    environment: dict[str, Any]
    outcome: SearchOutcome
    recipe: str
    claims_key: str | None = None
    saved: list[str] = field(default_factory=list)

    @property
    def config(self) -> VariantConfig:
        """The chosen config (the start point when nothing beat it)."""
        return self.outcome.winner_config

    def reference_stage(self) -> Rows | None:
        """The stage that measured the grad-mode references (where published claims are checked)."""
        return next((s.result for s in self.stages if s.result.row("eval+grad", self.settings["batch_size"])),
                    None)

    def candidates(self) -> list[tuple[Stage, Measurement]]:
        """Each variant once at the search batch size: its row from the last stage that ran it."""
        batch = self.settings["batch_size"]
        return self.latest_rows(lambda stage, row: stage.name != "sweep" and row.batch_size == batch)

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

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (kind ``optimize``: docs/json.md)."""
        return optimize_document(self)


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
        from pitstop.optimize.recipe import write_recipe_files

        return write_recipe_files(self.report, Path(directory))


def verdict_lines(report: OptimizeReport) -> list[str]:
    """The winner (or why the start point stays), its speed-ups, the objective's choice."""
    outcome, lines = report.outcome, []
    took = f"search took {outcome.elapsed_s:.0f} s of a {report.settings['time_budget_s']:g} s budget"
    if not outcome.complete:
        took += "; interrupted: best so far" if outcome.interrupted else "; incomplete"
    winner = outcome.winner
    if outcome.failed:
        lines.append(f"No winner: {outcome.verdict}. ({took})")
    elif winner is None:
        lines.append(f"Winner: {START.name} stays: {outcome.verdict}. ({took})")
    else:
        parts = []
        for base in (START.name, "eval+no_grad", "train+grad"):
            r = report.speedup_over(base)
            if r is not None:
                parts.append(f"{r.median:.2f}x [{r.ci95[0]:.2f}-{r.ci95[1]:.2f}] vs {base}")
        lines.append(f"Winner: {winner.variant} at batch {winner.batch_size}: {'; '.join(parts)} "
                     f"({outcome.verdict}; {took})")
    choice = report.choice()
    if report.settings["objective"] != "latency" or report.settings.get("latency_budget_ms") is not None:
        if choice is None:
            lines.append(f"No batch size met p90 <= {report.settings['latency_budget_ms']:g} ms.")
        else:
            row = choice.row
            lines.append(f"Objective {report.settings['objective']}: batch {row.batch_size} "
                         f"({choice.reason}): {row.throughput:,.0f} samples/s, "
                         f"p90 {row.latency.p90:.3g} ms per batch")  # type: ignore[union-attr]
    if report.saved:
        lines.append(f"Saved: {', '.join(report.saved)}")
    return lines


def optimize_document(report: OptimizeReport) -> dict[str, Any]:
    """The JSON document: every stage's rows (with ``stage``), the winner, the choice, the search."""
    from pitstop.bench.claims import check_claims  # claims read results: imported when a document is made

    results = []
    for stage in report.stages:
        for row in stage.rows:
            results.append({**row_document(stage.result, row), "stage": stage.name})
    winner, ratio = report.outcome.winner, report.speedup
    choice = report.choice()
    probe = report.reference_stage()
    claims = []
    if probe is not None and report.claims_key:
        claims = [{"claim": c.claim.text, "source": c.claim.source, "variant": c.claim.variant,
                   "baseline": c.claim.baseline, "batch_size": c.batch_size,
                   "claimed_time_cut": [c.claim.low, c.claim.high], "measured_time_cut": c.measured,
                   "measured_ci95": list(c.ci95) if c.ci95 else None, "verdict": c.verdict}
                  for c in check_claims(probe, report.claims_key)]
    return envelope(
        "optimize", report.environment, model=report.model, settings=report.settings,
        baseline=START.name, complete=report.outcome.complete, interrupted=report.outcome.interrupted,
        results=results,
        winner=None if report.outcome.failed else {
            "variant": report.config.name, "config": report.config.to_dict(report.settings["threads"]),
            "batch_size": winner.batch_size if winner else report.settings["batch_size"],
            "stage": report.outcome.winner_stage.name if winner and report.outcome.winner_stage else None,
            "speedup": {"median": ratio.median, "ci95": list(ratio.ci95)} if ratio else None,
            "speedup_vs": {b: {"median": r.median, "ci95": list(r.ci95)} for b in ("eval+no_grad", "train+grad")
                           if (r := report.speedup_over(b)) is not None},
            "verdict": report.outcome.verdict, "runner_up": report.outcome.runner_up or None,
            "recipe": report.recipe,
        },
        choice={"variant": choice.row.variant, "batch_size": choice.row.batch_size, "reason": choice.reason,
                   "throughput_per_s": choice.row.throughput,
                   "p90_ms": choice.row.latency.p90 if choice.row.latency else None} if choice else None,
        search={"elapsed_s": report.outcome.elapsed_s, "time_budget_s": report.settings["time_budget_s"],
                   "stages": [{"name": s.name, "batch_size": s.rows[0].batch_size if s.rows else None,
                               "elapsed_s": s.elapsed_s, "load": s.load or None,
                               "variants": [r.variant for r in s.rows]} for s in report.stages]},
        claims=claims, notes=list(report.outcome.notes),
        advice=verdict_lines(report)[0] if report.stages else None,
        summary=verdict_lines(report),
        saved=report.saved,
    )
