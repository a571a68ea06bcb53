"""The train search, within ``time_budget_s``: probe each technique alone (one process each,
briefly; first-step gradients checked), prune to those faster than the naive step beyond noise
or by 5%, combine the survivors, then measure the finalists interleaved in several processes next
to the naive step, whose replicas are the fp32 reference seeds; every finalist's trajectory is
judged against their spread. The winner is the fastest that passes the gate and is faster beyond
noise (with ``steps``: whose compilation pays for itself within them); a simpler finalist within
noise and 3% is preferred. When the budget runs out, the best so far is reported."""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pitstop.engine.load import LoadMonitor
from pitstop.engine.measurement import Measurement
from pitstop.engine.result import Rows
from pitstop.engine.stages import Outcome, Stage, StagedSearch
from pitstop.engine.timer import TimingPolicy
from pitstop.stats import Ratio, speedup_groups
from pitstop.train.config import NAIVE, NAIVE_NAME, TrainConfig
from pitstop.train.group import OnEvent, TrainGroup
from pitstop.train.problem import ProblemRequest
from pitstop.train.settings import TrainSettings
from pitstop.train.settings import options as axis_options
from pitstop.train.variants.ddp import fits
from pitstop.train.winner import TIE, OptimizerGain, decide, optimizer_gain

MEANINGFUL = 1.05  # a technique combines when faster beyond noise, or by 5% (median)
PROBE_SHARE = 0.45  # of the budget: probe variants not started by then are skipped, and a first step (a
# compilation) still running then is stopped (the final needs the rest)
PROBE_CALLS, FINAL_CALLS = 5, 6  # timed steps every variant gets at least, whatever the budget (an interval)
FINALISTS, PREFETCH = 4, 4  # PREFETCH: a worker's batches made ahead, so that one slow batch does not stall a step
ROUND_S = 0.5  # timed seconds per variant per interleaved round: a turn of several steps, not one
SWITCH_IN = 1  # the first step of a turn is not a sample (a process switched in after another's turn)
MIN_ROUNDS = 3  # turns per variant before precision may end a stage (turns shortened to fit the budget): one
# 0.5 s turn of a 1 ms step is 500 samples of one moment, a tight interval that the next turn may not share


@dataclass
class TrainOutcome(Outcome):
    """The stages, the winner (None = the naive step stays) and why; ``failed``: why nothing can be
    recommended (the fp32 reference itself failed or is not finite: no recipe, exit 1)."""

    notes: list[str] = field(default_factory=list)
    threads: int | None = None  # the run's thread count (a config's own is stated in its name)
    failed: str = ""
    run_length: dict[str, Any] = field(default_factory=dict)  # {"steps", "source"}: the planned run (winner.py)

    @property
    def winner_config(self) -> TrainConfig:
        """The chosen config (the naive one when nothing beat it)."""
        return TrainConfig.from_dict(self.winner.config, self.threads) if self.winner else NAIVE


class TrainSearch(StagedSearch):
    """Runs the stages; ``on_stage(outcome)`` after each (to persist partial results)."""

    outcome: TrainOutcome

    def __init__(self, source: Any, settings: TrainSettings, problem: ProblemRequest | None, env: dict[str, Any], *,
                 on_event: OnEvent | None = None, on_stage: Callable[[TrainOutcome], None] | None = None,
                 group: TrainGroup | None = None) -> None:
        self.source, self.env = source, env
        self.group = group or TrainGroup(source, settings, problem or ProblemRequest(), on_event)
        self.on_stage = on_stage or (lambda outcome: None)
        self.outcome = TrainOutcome(threads=settings.threads)
        self.t0 = time.monotonic()
        self.limit_s = settings.time_budget_s * 0.92  # what is left covers the minimum calls and closing

    def _policy(self, variants: int, share: float, target: float, min_samples: int) -> TimingPolicy:
        """The stage's policy, with turns of several steps whose first is not timed: one step per
        turn, as a 50 ms round gave a 22 ms step on 2 cores, timed every variant just after another
        variant's process ran, and the eager script's step read 31 ms against 21 ms compiled (a
        predicted 1.44x that whole runs of the script measured at 1.1x; its own runs say 22 and 20 ms).
        At least ``MIN_ROUNDS`` turns each, shorter when the budget is small."""
        policy = super()._policy(variants, share, target, min_samples)
        return dataclasses.replace(policy, round_s=min(ROUND_S, policy.budget_s / MIN_ROUNDS), switch_in=SWITCH_IN,
                                   min_rounds=MIN_ROUNDS)

    @property
    def settings(self) -> TrainSettings:
        """The run's settings (the batch size settled once the model was inspected)."""
        return self.group.settings

    def _stages(self) -> None:
        monitor = LoadMonitor().start()  # sampled while the step is found: our own processes' CPU is not counted
        self.group.prepare()
        self._check_load(monitor)
        probe = self._stage("probe", [NAIVE, *self.singles()], share=0.2, target=0.05, min_samples=PROBE_CALLS)
        if self._reference_failed(probe):
            return
        finalists, replicas = self._plan(self.finalists())
        if self._too_long(finalists):
            return
        final = self._stage("final", [NAIVE, *finalists], share=0.7, target=self.settings.policy.target,
                            replicas=replicas, trajectory=True, memory=True)
        if self._reference_failed(final):
            return
        self.outcome.notes += self.group.notes_after(final.result.rows)
        moved = self._drifted(final)
        if moved and self.left_s() > final.elapsed_s:  # measured again: a passing load should not decide
            how = "" if self.group.one_thread else " on one thread, by CPU time"
            self.outcome.notes.append(f"final stage measured again{how}: {moved}")
            self.group.one_thread = True
            again = self._stage("final-2", [NAIVE, *finalists], share=0.9, target=self.settings.policy.target,
                                replicas=replicas, trajectory=True, memory=True)
            if self._reference_failed(again):
                return
            moved = self._drifted(again)
        if moved:
            self.outcome.failed = f"could not measure reliably: {moved} (load average " \
                                  f"{final.load.get('loadavg_end', 0):.1f}); run again on a quieter machine"

    def _check_load(self, monitor: LoadMonitor, seconds: float = 2.0) -> None:
        """Was the machine busy before the measurements start (``monitor`` began before the model
        was inspected, or the script's step found: at least ``seconds``)? Then every variant is
        measured on one thread and compared by its CPU time per step (``TrainGroup.measured``);
        thread counts are not searched (the ``threads`` axis is left out); the report says so."""
        load = self.load_before(monitor, seconds)
        if load.get("busy"):
            self.group.one_thread = True
            self.outcome.notes.append(
                f"the machine was busy before the search (other processes used {load.get('others_cpu_share') or 0:.0%} "
                "of the CPU): every variant was measured on one thread and compared by its CPU time per step; "
                "thread counts were not searched. Run again on a quiet machine for wall-time figures")

    def _drifted(self, stage: Stage) -> str | None:
        """Whether a variant's comparison with the reference moved within ``stage``, on the clock
        the variants are compared by (``ratio``)."""
        cpu = bool(stage.load.get("busy") or self.group.one_thread)
        return self.drifted(stage, NAIVE_NAME, self.settings.batch, cpu)

    def _reference_failed(self, stage: Stage) -> bool:
        """The naive (fp32) step failed, or its trajectory is not finite: nothing can be judged
        against it; the outcome says why (no winner, no recipe)."""
        naive = stage.result.row(NAIVE_NAME, self.settings.batch)
        why = ""
        if naive is None or naive.status == "failed":
            why = f"the fp32 reference (naive) failed in the {stage.name} stage: {naive.reason if naive else 'no row'}"
        elif self.group.band is not None and not all(
                math.isfinite(x) for x in (self.group.band["low"], self.group.band["high"])):
            why = "the fp32 reference's loss is not finite over the trajectory (NaN or Inf)"
        if why:
            self.outcome.failed = why
        return bool(why)

    def _stage(self, name: str, configs: list[TrainConfig], *, share: float, target: float, replicas: int = 1,
               trajectory: bool = False, memory: bool = False, min_samples: int = FINAL_CALLS) -> Stage:
        """One group; variants not yet started when the stage's share of the budget is spent (the
        probe's ``PROBE_SHARE``, the final's all of it) are skipped."""
        until = PROBE_SHARE if name == "probe" else 1.0
        policy = self._policy(len(configs), share, target, min_samples)
        result = Rows(model=self.source.name, inputs={}, settings={}, environment=self.env,
                             baseline=NAIVE_NAME)
        stage = Stage(name, result)
        self.outcome.stages.append(stage)
        started = time.monotonic()
        deadline = self.t0 + until * self.limit_s
        try:
            with self.watched(stage):
                self.group.run(configs, result.rows, policy=policy, replicas=replicas, trajectory=trajectory,
                               deadline=deadline, memory=memory or self._budgeted(),
                               first_step_by=deadline if name == "probe" else None)
        finally:
            result.inputs = {self.settings.batch: self.group.inputs_description} \
                if self.group.prepared else {}
            stage.elapsed_s = time.monotonic() - started
            self.outcome.elapsed_s = time.monotonic() - self.t0
            self.on_stage(self.outcome)
        return stage

    def reliable(self, stage: Stage, row: Measurement) -> bool:
        """A thread count or a loader's worker count measured while other processes took the CPU is
        never chosen (it measures them, not the model; and a busy machine compares variants by the
        CPU time of the training process, which leaves out the workers' and the input wait); the
        reason is noted once."""
        config = self.config_of(row)
        if config.threads is None and config.workers is None:
            return True
        what = "thread counts" if config.workers is None else "loader workers"
        note = self.busy_choice(stage, row, what)
        if note is None and config.workers is not None and self.group.one_thread:  # compared by CPU time
            note = (f"{row.variant}: not chosen: the variants were compared by the training process's CPU time, "
                f"which leaves out the workers and the input wait; measure {what} on a quiet machine")
        if note is None:
            return True
        if note not in self.outcome.notes:
            self.outcome.notes.append(note)
        return False

    def _budgeted(self) -> bool:
        return self.settings.memory_budget_bytes is not None

    # -- candidates -----------------------------------------------------------------------

    def singles(self) -> list[TrainConfig]:
        """Each technique alone (gated ones become ``skipped`` rows)."""
        axes, b = self.settings.techniques, self.settings.batch
        configs = [NAIVE.with_(**{axis: option}) for axis in axes for option in axis_options(self.settings, axis)
                   if axis != "ddp" or fits(option, self.group.target)]
        if "threads" in axes and not self.group.one_thread:
            from pitstop._env import physical_cores

            cores = physical_cores()
            configs += [NAIVE.with_(threads=n) for n in sorted({1, max(1, cores // 2), cores})
                        if n != self.settings.threads]
        if {"workers", "cache"} & set(axes):  # the input first where it waits (``loader_configs``), else after
            loaders, first = self._loader_configs()
            configs = loaders + configs if first else configs + loaders
        if "micro_batch" in axes:
            configs += [NAIVE.with_(micro_batch=b // k) for k in (2, 4) if b % k == 0 and b // k >= 1]
        blocks = self.group.target.checkpoint_blocks
        if "checkpoint" in axes and blocks:
            configs.append(NAIVE.with_(checkpoint=blocks))
            if b % 2 == 0 and b > 1:
                configs.append(NAIVE.with_(checkpoint=blocks, micro_batch=b // 2))
        return sorted(configs, key=lambda c: c.compile is not None)  # the costly probes last: a tight budget skips them

    def _loader_configs(self) -> tuple[list[TrainConfig], bool]:
        """A script's loader variants (``pitstop.train.script.loaders.loader_configs``)."""
        from pitstop.train.script.loaders import loader_configs

        found = getattr(self.group, "found", None) or {}
        return loader_configs(found, self.settings, self.group.one_thread, self.outcome.notes)

    def _faster(self) -> dict[str, list[tuple[TrainConfig, float]]]:
        """Per axis, the probed options faster than naive beyond noise or by ``MEANINGFUL``, in
        probe order (simplest first), with their median speed-ups; rejected ones never count."""
        probe = self.outcome.stages[0]
        faster: dict[str, list[tuple[TrainConfig, float]]] = {}
        for row in probe.rows:
            ratio = self.ratio(probe, row)
            if row.status != "ok" or row.variant == NAIVE_NAME or ratio is None or not self.fits(row):
                continue
            if not self.reliable(probe, row):
                continue
            via = self.optimizer_gain(probe, row)
            if ratio.ci95[0] > 1.0 or ratio.median >= MEANINGFUL or via is not None:
                config = self.config_of(row)
                speedup = ratio.median if ratio.ci95[0] > 1.0 or via is None else via.step
                faster.setdefault("+".join(config.axes_set), []).append((config, speedup))
        return faster

    def ratio(self, stage: Stage, row: Measurement, baseline: str = NAIVE_NAME) -> Ratio | None:
        """``row``'s speed-up over ``baseline`` in ``stage``: by wall time; on a busy machine (other
        processes took the CPU while the stage ran) by CPU time per step, which they do not move
        (at the same thread count: thread counts measured busy are not chosen at all)."""
        base = stage.result.row(baseline, row.batch_size)
        if (stage.load.get("busy") or self.group.one_thread) and base is not None:
            a, b = (base.details or {}).get("cpu_samples_s"), (row.details or {}).get("cpu_samples_s")
            if a and b and any(a) and any(b):
                return speedup_groups([g for g in a if g], [g for g in b if g])
        c = stage.result.comparison(row.variant, row.batch_size, baseline=baseline)
        return c.ratio if c else None

    def optimizer_gain(self, stage: Stage, row: Measurement) -> OptimizerGain | None:
        """See ``pitstop.train.winner.optimizer_gain``."""
        return optimizer_gain(self, stage, row)

    def config_of(self, row: Measurement) -> TrainConfig:
        return TrainConfig.from_dict(row.config, self.settings.threads)

    def fits(self, row: Measurement) -> bool:
        budget = self.settings.memory_budget_bytes
        return budget is None or row.peak_memory_bytes is None or row.peak_memory_bytes <= budget

    def _survivors(self) -> dict[str, tuple[TrainConfig, float]]:
        """Per axis, the simplest option within ``TIE`` of the axis's fastest; for the optimizer, the
        fused implementation when it is within ``TIE``: it is no more complex than foreach, and its
        lead grows as the rest of the step gets faster (nanoGPT: foreach and fused alike on the fp32
        step, fused 13% faster than foreach under bf16 autocast)."""
        best = {}
        for axis, options in self._faster().items():
            top = max(speedup for _, speedup in options)
            tied = [(c, sp) for c, sp in options if sp >= top / TIE]
            best[axis] = next((p for p in tied if p[0].optimizer == "fused"), tied[0]) if axis == "optimizer" \
                else tied[0]
        return best

    def finalists(self) -> list[TrainConfig]:
        """The fastest single technique (measured, where the rest are predictions: first, so that a
        short budget never drops it), the two strongest surviving axes combined, all of them
        combined, compile on the fastest reduced precision (in eager, autocast pays a cast around
        every op, which a compiled graph fuses: they compose better than their single speed-ups
        predict), the second single, then the other combinations by predicted speed-up; at most
        ``FINALISTS``, in that order; then refinements, not probed alone and the first dropped when
        time is short: the fused optimizer on the first combination (``_fused_refinement``), the first
        compiled finalist with compiled autograd (the whole backward captured at run time: it pays where
        the forward has graph breaks or the model backward hooks), the first with loader workers, each
        making ``PREFETCH`` batches ahead (torch's default 2)."""
        survivors = self._survivors()
        fixed = {a: s for a, s in survivors.items() if "threads" not in a}
        axes = sorted(fixed, key=lambda a: -fixed[a][1])[:4]

        def combine(subset: tuple[str, ...]) -> TrainConfig:
            config = NAIVE
            for axis in subset:
                single = fixed[axis][0]
                config = config.with_(**{a: getattr(single, a) for a in single.axes_set})
            return config

        firsts = [combine(tuple(axes[:2])), combine(tuple(axes))] if len(axes) >= 2 else []
        composed = self._composed()
        singles = [c for c, _ in sorted(survivors.values(), key=lambda p: -p[1])][:2]
        scored = sorted(((math.prod(fixed[a][1] for a in s), combine(s)) for r in range(2, len(axes) + 1)
                         for s in itertools.combinations(axes, r)), key=lambda p: -p[0])
        ordered = [*singles[:1], *firsts, *([composed] if composed else []), *singles[1:], *(c for _, c in scored)]
        finalists = [c for c in dict.fromkeys(ordered) if not (c.checkpoint and c.compile)][:FINALISTS]
        refined = self._fused_refinement(finalists)
        if refined is not None and refined not in finalists:  # refinements last: the first dropped when short
            finalists.append(refined)
        compiled = next((c for c in finalists if c.compile == "default"), None)
        loaded = next((c for c in finalists if c.workers and c.prefetch is None), None)
        finalists += [c for c in (compiled and compiled.with_(compile="compiled-autograd"),
                                  loaded and loaded.with_(prefetch=PREFETCH)) if c is not None]
        return [c for c in finalists if self.group.runnable(c)]

    def _fused_refinement(self, finalists: list[TrainConfig]) -> TrainConfig | None:
        """The fused optimizer on the first finalist that combines techniques, when no optimizer
        implementation survived the probe but fused ran there: the optimizer step is a fixed cost
        whose share grows as the rest gets faster, so an implementation within noise on the naive
        step can pay on a fast one (zoo:cnn: fused alone 1.06x, bf16+channels_last 2.33x, with
        fused 2.53x)."""
        probe = {r.variant: r for r in self.outcome.stages[0].rows}
        fused = probe.get(NAIVE.with_(optimizer="fused").name)
        if "optimizer" not in self.settings.techniques or "optimizer" in self._survivors() \
                or fused is None or fused.status != "ok":
            return None
        base = next((c for c in finalists if len(c.parts) > 1), finalists[0] if finalists else None)
        return base.with_(optimizer="fused") if base is not None and base.optimizer == "for-loop" else None

    def _composed(self) -> TrainConfig | None:
        """Compile on the fastest probed reduced precision, if both ran and passed the gradient check."""
        probe = self.outcome.stages[0]
        ok = {r.variant for r in probe.rows if r.status == "ok"}
        if "compile" not in ok:
            return None
        precision = [c for c, _ in self._faster().get("precision", [])]
        return precision[0].with_(compile="default") if precision else None

    def _plan(self, finalists: list[TrainConfig]) -> tuple[list[TrainConfig], int]:
        """Fewer replicas, then fewer finalists, until the final's estimated ``cost`` fits in 80% of the time left."""
        return self._fit_final(finalists, self.settings.replicas, self.cost, 0.8)

    def _too_long(self, finalists: list[TrainConfig]) -> bool:
        """Would even the smallest final (the reference's trajectories and one finalist's, from the
        probe's step times) overrun the budget by over twice what is left, and by over a minute? Then
        nothing can be gated in time: the search stops and says what budget the script needs."""
        need, left = self.cost(finalists[:1], 1), max(self.left_s(), 0.0)
        if need <= max(2 * left, 60.0):
            return False
        naive = {r.variant: r for r in self.outcome.stages[0].rows}.get(NAIVE_NAME)
        steps = self.settings.trajectory_steps + FINAL_CALLS + 2
        budget = 10 * math.ceil(((time.monotonic() - self.t0) + need) / 10)
        self.outcome.failed = (
            f"the time budget is too short for this script: a step takes {_step_s(naive, 1.0):.1f} s, and the "
            f"gate needs the unmodified script's {self.settings.seeds} runs of {steps} steps next to each finalist's "
            f"(~{need:.0f} s; {left:.0f} s of --time-budget-s {self.settings.time_budget_s:.0f} left); run again with "
            f"--time-budget-s {budget} or more, or with arguments that make a step shorter")
        return True

    def cost(self, finalists: list[TrainConfig], replicas: int) -> float:
        """The final's estimated seconds (start-up, trajectories, compilation), 20% over."""
        probe = {r.variant: r for r in self.outcome.stages[0].rows}
        naive_step, steps = _step_s(probe.get(NAIVE_NAME), 1.0), self.settings.trajectory_steps + FINAL_CALLS + 2
        cost = self._start_s(probe, self.settings.seeds + replicas * len(finalists)) \
            + self.settings.seeds * steps * naive_step
        compiled = (probe["compile"].compile_s or 0.0) if "compile" in probe else 0.0
        for config in finalists:
            step = _step_s(probe.get(config.name), naive_step)
            cost += replicas * (steps * step + (compiled if config.compile else 0.0))
        return cost * 1.2

    @staticmethod
    def _start_s(probe: dict[str, Measurement], processes: int) -> float:
        """The start-up of ``processes`` started together: the probe's longest (all its processes started
        at once on the same cores) scaled by their share of the probe's, never above it (docs/commands/train.md)."""
        starts = [r.phases_s["start"] for r in probe.values() if "start" in r.phases_s]
        ran = sum(r.status == "ok" for r in probe.values())
        return max(starts, default=0.0) * min(1.0, processes / max(ran, 1))

    # -- the winner -----------------------------------------------------------------------

    def _decide(self) -> None:
        decide(self)  # pitstop.train.winner


def _step_s(row: Measurement | None, default: float) -> float:
    """A probed variant's seconds per step: its timed median (measured one process at a time),
    else its warm-up's per-call time (which ran while the other workers loaded: an overestimate)."""
    if row is not None and row.latency is not None:
        return row.latency.median / 1e3
    if row is not None and row.warmup:
        return float(row.warmup.get("per_call_s", default))
    return default
