"""What the optimize and train searches share: a ``Stage`` (one interleaved group of rows that
re-measures the baseline alongside), the ``Outcome`` of a search, ``StagedSearch`` (the budget,
the stages run with Ctrl-C keeping the best so far, the timing policy per stage, the final's
plan) and ``StagedReport`` (each variant's latest row, the winner's speed-up, a compiled
variant's break-even, JSON text and rendering). Each search keeps its own candidates and rules."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pitstop._document import Rendered
from pitstop.engine.load import LoadMonitor, merge, stage_drift
from pitstop.engine.measurement import Measurement
from pitstop.engine.result import Rows
from pitstop.engine.timer import TimingPolicy
from pitstop.stats import Ratio

__all__ = ["Outcome", "Stage", "StagedReport", "StagedSearch"]
C = TypeVar("C")


@dataclass
class Stage:
    """One interleaved group of a search: its rows compare with the baseline measured alongside."""

    name: str  # probe | combine | final | sweep
    result: Rows
    elapsed_s: float = 0.0  # wall time of the stage: start-up, compilation, profiling and timing
    load: dict[str, Any] = field(default_factory=dict)  # the machine's load meanwhile (engine/load.py)

    @property
    def rows(self) -> list[Measurement]:
        return self.result.rows


@dataclass
class Outcome:
    """The stages, the winner (None = the baseline stays) and why."""

    stages: list[Stage] = field(default_factory=list)
    winner: Measurement | None = None
    winner_stage: Stage | None = None
    verdict: str = ""
    elapsed_s: float = 0.0
    complete: bool = False
    interrupted: bool = False


class StagedSearch:
    """The budget and the run of a staged search. A subclass sets ``outcome``, ``group`` (closed
    at the end), ``on_stage``, ``t0``, ``limit_s`` and ``env``, and defines ``_stages`` and
    ``_decide``.

    The load discipline every search follows (optimize, train, generate): the machine's load is
    recorded before the search (``load_before``) and over each stage (``watched``: the stage's
    ``load``, and the merged record in ``env["load"]``); a thread or worker count measured while
    other processes took the CPU is never chosen (``busy_choice``: it measures them, not the model);
    a stage whose comparisons moved while it ran (``drifted``) is measured again when time allows.
    Compilation never overlaps timing: a group prepares (compiles, exports) every variant before its
    first timed round."""

    outcome: Outcome
    group: Any
    on_stage: Callable[[Any], None]
    t0: float
    limit_s: float
    env: dict[str, Any]

    def load_before(self, monitor: LoadMonitor, seconds: float = 2.0) -> dict[str, Any]:
        """The machine's load before the measurements (``monitor`` started at the search's start;
        sampled for at least ``seconds``), recorded as ``env["load_at_start"]``."""
        time.sleep(max(0.0, seconds - (time.monotonic() - monitor.t0)))
        load = monitor.stop()
        self.env["load_at_start"] = load
        return load

    @contextmanager
    def watched(self, stage: Stage) -> Iterator[None]:
        """Record the machine's load while ``stage`` runs (also when it stops early)."""
        monitor = LoadMonitor().start()
        try:
            yield
        finally:
            stage.load = monitor.stop()
            self.env["load"] = merge([s.load for s in self.outcome.stages if s.load])

    def busy_choice(self, stage: Stage, row: Measurement, what: str) -> str | None:
        """Why ``row`` (a variant that sets ``what``: thread counts, loader workers) cannot be chosen:
        it was measured while other processes took the CPU, before or during the search; None when
        the machine was quiet."""
        start = self.env.get("load_at_start") or {}
        if not (stage.load.get("busy") or start.get("busy")):
            return None
        share = max(stage.load.get("others_cpu_share") or 0, start.get("others_cpu_share") or 0)
        return (f"{row.variant}: not chosen: measured while other processes used {share:.0%} of the CPU (load "
                f"average {stage.load.get('loadavg_end', 0):.1f}); measure {what} on a quiet machine")

    def drifted(self, stage: Stage, baseline: str, batch_size: int, cpu: bool = False) -> str | None:
        """Whether a variant's comparison with ``baseline`` moved while ``stage`` ran (a passing
        load that slowed one variant more than the others); the reason, or None."""
        base = stage.result.row(baseline, batch_size)
        return stage_drift(base, [r for r in stage.result.rows if r.batch_size == batch_size], cpu) \
            if base is not None else None

    def left_s(self) -> float:
        """Seconds of the current limit still unspent."""
        return self.limit_s - (time.monotonic() - self.t0)

    def _policy(self, variants: int, share: float, target: float, min_samples: int) -> TimingPolicy:
        """Timed seconds per variant: ``share`` of the time left, split between the variants
        (each also pays start-up, warm-up and compilation, hence the factor 2). Every variant gets
        ``min_samples`` timed calls whatever the budget says: an interval needs them."""
        per_variant = max(0.3, min(30.0, share * self.left_s() / max(variants, 1) / 2))
        return TimingPolicy(target=target, budget_s=per_variant, min_samples=min_samples, warmup_min_calls=2,
                            warmup_max_s=max(0.3, 0.2 * per_variant))

    def run(self) -> Any:
        """All stages; on Ctrl-C, the best so far (marked interrupted)."""
        try:
            self._stages()
            self.outcome.complete = True
        except KeyboardInterrupt:
            self.outcome.interrupted = True
        except Exception as exc:  # the partial results written below say why the run stopped
            if hasattr(self.outcome, "failed") and not self.outcome.failed:
                self.outcome.failed = str(exc)
            raise
        finally:
            self._decide()
            self.outcome.elapsed_s = time.monotonic() - self.t0
            self.group.close()
            self.on_stage(self.outcome)
        return self.outcome

    def _stages(self) -> None:
        raise NotImplementedError

    def _decide(self) -> None:
        raise NotImplementedError

    def _fit_final(self, finalists: Sequence[C], replicas: int, cost: Callable[[list[C], int], float],
              share: float) -> tuple[list[C], int]:
        """Fewer replicas, then fewer finalists (from the end), until the final's estimated
        ``cost(finalists, replicas)`` fits in ``share`` of the time left."""
        kept = list(finalists)
        while cost(kept, replicas) > share * self.left_s():
            if replicas > 1:
                replicas -= 1
            elif len(kept) > 1:
                kept = kept[:-1]
            else:
                break
        return kept, replicas


class StagedReport(Rendered):
    """A report dataclass over an ``outcome`` of stages; ``BASELINE`` names the row every stage
    measures alongside (speed-ups and break-evens are against it)."""

    BASELINE: ClassVar[str]
    outcome: Any

    @property
    def stages(self) -> list[Stage]:
        return self.outcome.stages

    @property
    def speedup(self) -> Ratio | None:
        """The winner's speed-up over the baseline, measured alongside it."""
        return self.speedup_over(self.BASELINE)

    def speedup_over(self, baseline: str) -> Ratio | None:
        """The winner's speed-up over ``baseline`` where both ran in the winner's stage."""
        winner, stage = self.outcome.winner, self.outcome.winner_stage
        if winner is None or stage is None:
            return None
        comparison = stage.result.comparison(winner.variant, winner.batch_size, baseline=baseline)
        return comparison.ratio if comparison else None

    def latest_rows(self, keep: Callable[[Stage, Measurement], bool] | None = None
                    ) -> list[tuple[Stage, Measurement]]:
        """Each variant once (of the rows ``keep`` admits): its row from the last stage that
        measured it (a ``skipped`` row never hides a measured one)."""
        latest: dict[str, tuple[Stage, Measurement]] = {}
        for stage in self.stages:
            for row in stage.rows:
                if (keep is None or keep(stage, row)) and (row.variant not in latest or row.status != "skipped"):
                    latest[row.variant] = (stage, row)
        return list(latest.values())

    def break_even(self, row: Measurement, stage: Stage) -> float | None:
        """Calls (steps) after which a compiled / exported variant has paid back its preparation
        time against the baseline of its stage; None when it is not faster."""
        base = stage.result.row(self.BASELINE, row.batch_size)
        if row.compile_s is None or not (base and base.latency and row.latency):
            return None
        saved_s = (base.latency.median - row.latency.median) / 1e3
        return row.compile_s / saved_s if saved_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError
