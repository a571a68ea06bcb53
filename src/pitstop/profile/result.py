"""``ProfileReport``: the values of a profile run (renderers live in ``pitstop.report.profile``).

Statistics come from the measured steps (the first step and the drill-down's window left out):
the step's median and the 95% interval of that median; each phase's share of the total time over
those steps, and its ``median_ms`` as that share of the median step, so the phases add up to the
median step exactly. A phase that was never measured (no DataLoader, no CUDA copies) has
``median_ms`` and ``share`` None: shown as "not measured", never as 0."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from pitstop import _render
from pitstop._document import envelope
from pitstop.profile.phases import PHASES, StepTimes
from pitstop.stats import median_ci


@dataclass
class ProfileReport:
    """Step time, phases, syncs, top ops and the verdict of one profiled run (``to_dict``: the JSON)."""

    step_ms: dict[str, Any]  # {"median", "ci95": [lo, hi], "n"}; median None when no step was measured
    phases: list[dict[str, Any]]
    syncs: list[dict[str, Any]] = field(default_factory=list)
    top_ops: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    verdict: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0  # optimizer steps completed
    timeline: list[dict[str, Any]] = field(default_factory=list)  # per step: wall_ms, phases, measured
    drill_down: dict[str, Any] = field(default_factory=dict)  # {"steps": [first, last] | None, "trace": path}
    clock: str = "wall clock"
    script: str | None = None
    exit: dict[str, Any] = field(default_factory=lambda: {"status": "ok"})
    internal: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)

    def share(self, phase: str) -> float | None:
        """A phase's share of the step (None: not measured)."""
        return next((p["share"] for p in self.phases if p["name"] == phase), None)

    @property
    def causes(self) -> list[str]:
        """The verdict's causes, the largest expected saving first."""
        return [v["cause"] for v in self.verdict]

    def to_dict(self) -> dict[str, Any]:
        """The ``kind: profile`` JSON document (the issue's shape, plus the per-step timeline)."""
        return envelope("profile", self.environment, script=self.script, exit=self.exit, steps=self.steps,
                        clock=self.clock, step_ms=self.step_ms, phases=self.phases, syncs=self.syncs,
                        top_ops=self.top_ops, drill_down=self.drill_down, verdict=self.verdict,
                        timeline=self.timeline, internal=self.internal)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileReport:
        keys = ("step_ms", "phases", "syncs", "top_ops", "verdict", "steps", "timeline", "drill_down", "clock",
                "script", "exit", "internal", "environment")
        return cls(**{k: d[k] for k in keys if k in d and d[k] is not None})

    def table(self) -> str:
        return _render.text(self)

    def __str__(self) -> str:
        return _render.text(self)

    def _repr_html_(self) -> str:
        return _render.html(self)


def summarize_steps(steps: list[StepTimes], seen: set[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``step_ms`` and the phase rows over the measured steps (all steps when none is measured)."""
    chosen = [s for s in steps if s.measured] or steps
    walls = [s.wall_s * 1e3 for s in chosen]
    if not walls or sum(walls) <= 0:
        return ({"median": None, "ci95": None, "n": 0},
                [{"name": p, "median_ms": None, "share": None, "ci95": None} for p in PHASES])
    median, total = statistics.median(walls), sum(walls)
    rows: list[dict[str, Any]] = []
    for phase in PHASES:
        if phase not in seen:
            rows.append({"name": phase, "median_ms": None, "share": None, "ci95": None})
            continue
        per_step = [s.phases[phase] * 1e3 for s in chosen]
        share = sum(per_step) / total
        rows.append({"name": phase, "median_ms": share * median, "share": share, "ci95": list(median_ci(per_step))})
    return {"median": median, "ci95": list(median_ci(walls)), "n": len(walls)}, rows


def timeline(steps: list[StepTimes], limit: int = 500) -> list[dict[str, Any]]:
    """Per step (the first ``limit``): wall ms, each phase's ms, whether it counts in the statistics."""
    return [{"step": s.step, "wall_ms": s.wall_s * 1e3, "measured": s.measured,
             "phases": {p: v * 1e3 for p, v in s.phases.items() if v}} for s in steps[:limit]]
