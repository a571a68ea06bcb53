"""``ProfileReport``: the values of a profile run (renderers live in ``pitstop.report.profile``).

Statistics come from the measured steps (the first step and the drill-down's window left out),
each step's time without its evaluation (``eval``: a validation loop between two steps, reported
apart: ``evaluation``) and without the stalls (a step far outside the distribution: more than 3x
the median and 10 median absolute deviations above it; each reported with its step and the phase
that took the time, never spread over the others). The step's median and the 95% interval of that
median; each phase's ``median_ms`` and ``ci95`` from its own per-step values (so the value lies
inside its interval, and one slow step moves nothing), its ``share`` that median over the median
step (the shares need not add up to 100%: medians do not add). A phase that was never measured (no
DataLoader, no CUDA copies) has ``median_ms`` and ``share`` None: "not measured", never 0.
``page_faults``: the median minor page faults of those steps, one fault's cost measured on this
machine, and their estimated time and share of the step (``faults.py``)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from pitstop._document import Rendered, envelope
from pitstop.profile import faults as _faults
from pitstop.profile.phases import PHASES, StepTimes
from pitstop.stats import median_ci


@dataclass
class ProfileReport(Rendered):
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
    evaluation: dict[str, Any] | None = None  # {"count", "median_ms", "share_of_wall"}: validation between steps
    distributed: dict[str, Any] | None = None  # under torchrun, on rank 0: world, ranks (summaries), skew, straggler
    comm_wait_ms: float | None = None  # this rank's median wait for the gradient all-reduce per step
    comm: dict[str, Any] | None = None  # the all-reduce per step: ms, overlapped share, exposed_ms (comm.py)
    stalls: list[dict[str, Any]] = field(default_factory=list)  # {"step", "wall_ms", "median_ms", "phase", "phase_ms"}
    page_faults: dict[str, Any] | None = None  # {"per_step", "us_each", "ms_per_step", "share"} (faults.py)

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
                        evaluation=self.evaluation, stalls=self.stalls, distributed=self.distributed,
                        comm_wait_ms=self.comm_wait_ms, comm=self.comm, page_faults=self.page_faults,
                        timeline=self.timeline,
                        internal=self.internal)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileReport:
        keys = ("step_ms", "phases", "syncs", "top_ops", "verdict", "steps", "timeline", "drill_down", "clock",
                "script", "exit", "internal", "environment", "evaluation", "stalls", "distributed", "comm_wait_ms",
                "comm", "page_faults")
        return cls(**{k: d[k] for k in keys if k in d and d[k] is not None})

STALL_RATIO, STALL_MADS = 3.0, 10.0  # a stall: over 3x the median step and 10 MADs above it


@dataclass
class Summary:
    """What the measured steps say: the step, each phase, the evaluation between steps, the stalls."""

    step_ms: dict[str, Any]
    phases: list[dict[str, Any]]
    evaluation: dict[str, Any] | None = None
    stalls: list[dict[str, Any]] = field(default_factory=list)
    page_faults: dict[str, Any] | None = None


def summarize_steps(steps: list[StepTimes], seen: set[str], tail_eval_s: float = 0.0,
                    calibrate: bool = True) -> Summary:
    """The statistics of the measured steps (all steps when none is measured); see the module's
    docstring. ``tail_eval_s``: an evaluation after the last step; ``calibrate``: as for
    ``faults.summary`` (False for a snapshot of a run still going)."""
    chosen = [s for s in steps if s.measured] or steps
    train = [(s, (s.wall_s - s.eval_s) * 1e3) for s in chosen]
    if not train or sum(ms for _, ms in train) <= 0:
        return Summary({"median": None, "ci95": None, "n": 0},
                       [{"name": p, "median_ms": None, "share": None, "ci95": None} for p in PHASES],
                       _evaluation(steps, tail_eval_s))
    kept, stalls = _without_stalls(train)
    walls = [ms for _, ms in kept]
    median = statistics.median(walls)
    rows: list[dict[str, Any]] = []
    for phase in PHASES:
        if phase not in seen:
            rows.append({"name": phase, "median_ms": None, "share": None, "ci95": None})
            continue
        per_step = [s.phases[phase] * 1e3 for s, _ in kept]
        value = statistics.median(per_step)
        rows.append({"name": phase, "median_ms": value, "share": value / median if median else None,
                     "ci95": list(median_ci(per_step))})
    counted = [s.faults for s, _ in kept if s.faults is not None]
    return Summary({"median": median, "ci95": list(median_ci(walls)), "n": len(walls)}, rows,
                   _evaluation(steps, tail_eval_s), stalls, _faults.summary(counted, median, calibrate))


Timed = list[tuple[StepTimes, float]]  # a step and its training time (ms)


def _without_stalls(train: Timed) -> tuple[Timed, list[dict[str, Any]]]:
    """The steps without the stalls, and the stalls: each with the phase that took the excess time."""
    walls = [ms for _, ms in train]
    median = statistics.median(walls)
    mad = statistics.median(abs(w - median) for w in walls)
    limit = max(STALL_RATIO * median, median + STALL_MADS * mad)
    if len(train) < 5:
        return train, []
    kept = [(s, ms) for s, ms in train if ms <= limit]
    typical = {p: statistics.median(s.phases[p] * 1e3 for s, _ in kept) for p in PHASES}
    stalls = []
    for s, ms in train:
        if ms > limit:
            phase = max(PHASES, key=lambda p: s.phases[p] * 1e3 - typical[p])
            stalls.append({"step": s.step, "wall_ms": ms, "median_ms": median, "phase": phase,
                           "phase_ms": s.phases[phase] * 1e3})
    return kept, stalls


def _evaluation(steps: list[StepTimes], tail_eval_s: float = 0.0) -> dict[str, Any] | None:
    """The evaluations between steps (and after the last): how many, the median time of one, their
    share of the run."""
    evals = [s.eval_s * 1e3 for s in steps if s.eval_s > 0] + ([tail_eval_s * 1e3] if tail_eval_s > 0 else [])
    wall = sum(s.wall_s for s in steps) * 1e3 + tail_eval_s * 1e3
    if not evals or wall <= 0:
        return None
    return {"count": len(evals), "median_ms": statistics.median(evals), "share_of_wall": sum(evals) / wall}


def timeline(steps: list[StepTimes], limit: int = 500) -> list[dict[str, Any]]:
    """Per step (the first ``limit``): wall ms, each phase's ms, an evaluation's ms before it, whether
    it counts in the statistics."""
    return [{"step": s.step, "wall_ms": s.wall_s * 1e3, "measured": s.measured,
             "phases": {p: v * 1e3 for p, v in s.phases.items() if v},
             **({"eval_ms": s.eval_s * 1e3} if s.eval_s else {})} for s in steps[:limit]]
