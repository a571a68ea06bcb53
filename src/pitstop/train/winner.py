"""The train search's winner: the fastest gate-passing finalist beyond noise (``decide``), and an
optimizer implementation judged on ``optimizer.step()`` itself (``optimizer_gain``). ``search`` is
the ``TrainSearch`` whose stages they read, through the public part ``Searched`` names (a protocol:
that module imports this one)."""

from __future__ import annotations

import itertools
import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Protocol

from pitstop.engine.measurement import Measurement
from pitstop.engine.stages import Stage
from pitstop.stats import Ratio, speedup_groups
from pitstop.train.config import NAIVE_NAME, TrainConfig


class Searched(Protocol):
    """What the winner's rules read of a ``TrainSearch``."""

    outcome: Any  # its TrainOutcome: stages, notes, winner, verdict
    group: Any  # its TrainGroup: settings, first steps, runnable configs
    t0: float

    @property
    def settings(self) -> Any: ...

    def ratio(self, stage: Stage, row: Measurement, baseline: str = NAIVE_NAME) -> Ratio | None: ...

    def config_of(self, row: Measurement) -> TrainConfig: ...

    def fits(self, row: Measurement) -> bool: ...

    def reliable(self, stage: Stage, row: Measurement) -> bool: ...

    def cost(self, finalists: list[TrainConfig], replicas: int) -> float: ...

TIE = 1.03  # within 3% (and within noise): the simpler one is preferred
MIN_SAVING = 0.01  # an optimizer implementation judged on its own step saves at least 1% of the whole step


@dataclass(frozen=True)
class OptimizerGain:
    """An optimizer implementation's gain measured on ``optimizer.step()`` over ``sibling`` (the same
    step with the for-loop optimizer): ``phase``, that step's speed-up; ``share``, the time saved as
    a fraction of the sibling's step; ``on_sibling``, the step's speed-up that saving makes; ``step``,
    the speed-up over naive; ``step_s``, the step's seconds."""

    sibling: str
    phase: Ratio
    share: float
    on_sibling: float
    step: float
    step_s: float  # the sibling's median step less the time saved


def optimizer_gain(search: Searched, stage: Stage, row: Measurement) -> OptimizerGain | None:
    """An optimizer implementation judged where it acts: ``row`` differs from a row of ``stage``
    (its sibling: naive, or the same techniques with the for-loop optimizer) in the optimizer's
    implementation only, so the rest of their steps is the same work and the difference is in
    ``optimizer.step()``, timed apart (the probe's step hooks). It counts when that phase is
    faster beyond noise, saves at least ``MIN_SAVING`` of the step, and the whole step is not
    slower beyond noise; the step's speed-up is then the sibling's step less the phase's
    measured saving (a whole step's noise hides a saving of a few percent that the phase shows
    plainly). None otherwise."""
    config = search.config_of(row)
    if row.status != "ok" or config.optimizer == "for-loop":
        return None
    sibling = stage.result.row(config.with_(optimizer="for-loop").name, row.batch_size)
    if sibling is None or sibling.status != "ok" or not sibling.latency or not row.latency:
        return None
    a, b = ((x.details or {}).get("optimizer_samples_s") for x in (sibling, row))
    a, b = [g for g in a or [] if g], [g for g in b or [] if g]
    step = search.ratio(stage, row, baseline=sibling.variant)
    if not a or not b or step is None or step.ci95[1] < 1.0:
        return None
    phase = speedup_groups(a, b)
    base_s = sibling.latency.median / 1e3
    saved = statistics.median(itertools.chain(*a)) - statistics.median(itertools.chain(*b))
    if phase.ci95[0] <= 1.0 or not MIN_SAVING * base_s <= saved < base_s:
        return None
    on_sibling = base_s / (base_s - saved)
    over = search.ratio(stage, sibling) if sibling.variant != NAIVE_NAME else None
    return OptimizerGain(sibling.variant, phase, saved / base_s, on_sibling,
                         on_sibling * (over.median if over else 1.0), base_s - saved)


def planned_steps(search: Searched) -> tuple[int | None, str]:
    """The optimizer steps the user's run will take, and where that was read: ``--steps``; the
    unmodified script's own end, reached while it was timed; the script's loop bounds or its
    Trainer's settings (``pitstop.train.script.run_length``, read in the discovery run); else None
    with the reason."""
    if search.settings.steps is not None:
        return int(search.settings.steps), "--steps"
    for stage in reversed(search.outcome.stages):
        naive = stage.result.row(NAIVE_NAME, search.settings.batch)
        ended = ((naive.details or {}) if naive else {}).get("timed_until_the_script_ended")
        if ended:
            return int(ended), "the unmodified script's own end, reached while it was timed"
    found = getattr(search.group, "found", None) or {}
    length = found.get("run_length") or {}
    if length.get("steps"):
        return int(length["steps"]), str(length.get("source"))
    if not found:
        return None, "a model is measured, not a script: give --steps N for the planned run"
    return None, str(length.get("source") or "it was not read")


def one_time_s(search: Searched, stage: Stage, row: Measurement) -> float | None:
    """The seconds a variant pays once per run, beyond the unmodified script: its compilation (its
    first step, ``compile_s``: the longest any stage measured, which is the cold one, since a later
    process finds inductor's cache warm: a short script's compile took 18-23 s in the probe and 3 s
    in the final, and a user's new machine or container compiles cold) and its loader's worker
    start-up (the time from the script's start to its first training step, beyond naive's) and its
    item cache's first making of every item (that fill as timed in the variant's process; with
    workers, at least it); None when it has none of them."""
    config = search.config_of(row)
    compiles = [r.compile_s for st in search.outcome.stages for r in st.rows
                if r.variant == row.variant and r.compile_s] if config.compile else []
    cost = max(compiles) if compiles else None
    naive = stage.result.row(NAIVE_NAME, row.batch_size)
    fill = (row.details or {}).get("cache_fill_s") if config.cache else None
    if config.cache and not config.workers and fill is not None:
        # the fill, timed where it runs, is all a cache adds before the first step: the difference of two
        # processes' start-ups on a loaded machine read 0.75 s for a 0.25 s fill and refused a cache
        return (cost or 0.0) + fill
    if (config.workers or config.cache) and naive is not None:
        a, b = ((x.details or {}).get("before_first_step_s") for x in (naive, row))
        if a is not None and b is not None:
            cost = (cost or 0.0) + max(0.0, b - a, fill or 0.0)
    return cost


def _items_reused(search: Searched, row: Measurement, steps: int | None) -> str | None:
    """Why an item cache gains nothing over the planned run: it lasts one epoch or less, so no item
    is made twice (None: it may gain, or the run length is unknown)."""
    found = getattr(search.group, "found", None) or {}
    sites = found.get("sites") or {}
    index = sites.get("train_loader")
    if not search.config_of(row).cache or steps is None or index is None:
        return None
    per_epoch = (sites["loaders"][index].get("batches") or 0) / max(1, int(found.get("backwards_per_step") or 1))
    if per_epoch and steps <= per_epoch:
        return f"the planned run ({steps:,} steps) is one epoch of {per_epoch:,.0f} steps or less: no item made twice"
    return None


def _what(search: Searched, row: Measurement) -> str:
    config = search.config_of(row)
    return " and ".join(w for w, on in (("compilation", config.compile), ("worker start-up", config.workers),
                                         ("making every item once", config.cache)) if on)


def _unmeasured(search: Searched, stage: Stage) -> str | None:
    """Why nothing won when the budget ran out before the final measured a finalist, with a budget
    that would (the time used so far and the final's estimate for that finalist); else None."""
    skipped = [r for r in stage.rows if r.status == "skipped" and (r.reason or "").startswith("not measured: the time")]
    if not skipped:
        return None
    need = search.cost([search.config_of(skipped[0])], 1)
    budget = 10 * math.ceil((time.monotonic() - search.t0 + need) / 10)
    probe = {r.variant: r for r in search.outcome.stages[0].rows} if search.outcome.stages else {}
    ratio = search.ratio(search.outcome.stages[0], probe[skipped[0].variant]) if skipped[0].variant in probe else None
    seen = f", {ratio.median:.2f}x in the probe" if ratio else ""
    return (f"the time budget ran out before the final measured {skipped[0].variant}{seen}: nothing is recommended "
            f"without the gate; run again with --time-budget-s {budget} or more")


def decide(search: Searched) -> None:
    """The winner: in the last stage, the fastest gate-passing finalist faster than naive beyond
    noise (with a planned run length, ``planned_steps``: the least total time over it, one-time
    costs included, and only if they pay back within it); a simpler one within noise and 3% is
    preferred."""
    if search.outcome.failed:
        search.outcome.winner = None
        search.outcome.verdict = f"{search.outcome.failed}; nothing is recommended and no recipe is written"
        return
    stages = [s for s in search.outcome.stages if s.rows]
    if not stages:
        if search.outcome.interrupted:
            search.outcome.verdict = "interrupted before anything was measured"
        return
    stage = stages[-1]
    search.outcome.winner_stage = stage
    naive = stage.result.row(NAIVE_NAME, search.settings.batch)
    if not stage.name.startswith("final"):
        search.outcome.verdict = "the search stopped before the final stage: nothing passed the trajectory gate"
        return
    steps, source = planned_steps(search)
    search.outcome.run_length = {"steps": steps, "source": source}
    if steps is not None:
        search.outcome.notes.append(f"planned run: {steps:,} steps ({source}); one-time costs are counted against it")
    faster = []
    beyond = {r.variant for r in stage.rows if r.status == "ok" and r.variant != NAIVE_NAME
              and (x := search.ratio(stage, r)) is not None and x.ci95[0] > 1.0}
    gains = {r.variant: g for r in stage.rows if (g := optimizer_gain(search, stage, r)) is not None}
    by_phase = {v for v, g in gains.items() if v not in beyond and (g.sibling == NAIVE_NAME or g.sibling in beyond)}
    for row in stage.rows:  # faster beyond noise, or by its optimizer step on a step that is
        ratio = search.ratio(stage, row)
        if row.status != "ok" or row.variant == NAIVE_NAME or ratio is None:
            continue
        if row.variant not in beyond and row.variant not in by_phase:
            continue
        if not search.fits(row) or not search.reliable(stage, row):
            continue
        once = one_time_s(search, stage, row)
        reused = _items_reused(search, row, steps)
        if reused:
            search.outcome.notes.append(f"{row.variant}: {reused}: not chosen")
            continue
        if once is not None:
            row.details = {**(row.details or {}), "one_time_s": once}
        if steps is not None and naive and naive.latency and row.latency and once:
            even = once / max((naive.latency.median - row.latency.median) / 1e3, 1e-12)
            if even > steps:
                search.outcome.notes.append(f"{row.variant}: its one-time cost ({_what(search, row)}, {once:.1f} s) "
                                          f"pays back after {even:,.0f} steps, more than the {steps:,} planned "
                                          f"({source}): not chosen")
                continue
        via = gains[row.variant] if row.variant in by_phase else None
        step_s = via.step_s if via else (row.latency.median / 1e3 if row.latency else 0.0)
        total = (once or 0.0) + (steps or 0) * step_s
        faster.append((total if steps else -(via.step if via else ratio.median), row))
    if not faster:
        search.outcome.winner = None
        search.outcome.verdict = _unmeasured(search, stage) or \
            "no finalist passed the gate and was faster than naive beyond noise"
        return
    faster.sort(key=lambda p: p[0])
    winner = faster[0][1]
    for _, row in faster[1:]:
        simpler = len(search.config_of(row).parts) < len(search.config_of(winner).parts)
        vs = search.ratio(stage, winner, baseline=row.variant)
        kept = gains.get(winner.variant)
        if kept is not None and kept.sibling == row.variant:
            continue  # the winner's optimizer step is faster than this one's beyond noise
        if simpler and vs and vs.ci95[0] <= 1.0 and vs.median < TIE:
            winner = row
            break
    search.outcome.winner = winner
    once = (winner.details or {}).get("one_time_s")
    if steps is None and once and naive and naive.latency and winner.latency \
            and naive.latency.median > winner.latency.median:
        even = once / ((naive.latency.median - winner.latency.median) / 1e3)
        search.outcome.notes.append(
            f"the run length is unknown ({source}): {winner.variant} was chosen on its step time, assuming the run is "
            f"longer than {even:,.0f} steps, where its one-time cost ({_what(search, winner)}, {once:.1f} s) has paid "
            f"back; for a shorter run give --steps N and pitstop accounts for it")
    via = gains.get(winner.variant)
    if winner.variant in by_phase and via is not None:
        search.outcome.notes.append(
            f"{winner.variant}: chosen on its optimizer step, {via.phase.median:.2f}x faster "
            f"[{via.phase.ci95[0]:.2f}-{via.phase.ci95[1]:.2f}] than {via.sibling}'s, saving {via.share:.1%} of "
            f"that step ({via.on_sibling:.2f}x), less than the whole step's noise shows")
    search.outcome.verdict = ("least total time over the planned steps, beyond noise" if steps else
                            "fastest beyond noise that trains the same")
    if winner.variant in by_phase and via is not None:
        search.outcome.verdict = (f"its optimizer step is faster beyond noise ({via.phase.median:.2f}x, "
                                  f"{via.step:.2f}x predicted per step) and it trains the same")
    if stage.load.get("busy") or search.group.one_thread:
        chosen = search.ratio(stage, winner)
        search.outcome.verdict += " (compared by CPU time per step: the machine was busy"
        search.outcome.notes.append(
            f"the machine was busy (other processes used {stage.load.get('others_cpu_share') or 0:.0%} of the "
            f"CPU): variants were compared by the CPU time of a step, which other processes do not move; "
            f"{winner.variant} {chosen.median:.2f}x [{chosen.ci95[0]:.2f}-{chosen.ci95[1]:.2f}] by CPU time"
            if chosen else "the machine was busy: variants were compared by CPU time per step")
        search.outcome.verdict += ")"
