"""The optimize search: probe each technique alone (one process each, briefly), prune, then
measure the combinations of the survivors and the best singles fully, interleaved, in several
processes each, next to the references (train+grad, eval+grad, eval+no_grad); then (for
throughput) sweep batch sizes with the winner.

Every stage is one interleaved group (``group.py``) that re-measures the start point
(``eval+inference_mode``), so each speed-up is a ratio measured side by side in one run. The
search spends at most about ``time_budget_s``; when the budget runs out it reports the best so far."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pitstop._env import physical_cores
from pitstop.bench.group import GroupPlan, GroupRunner, OnEvent, Source
from pitstop.bench.variants.config import BASELINE, VariantConfig
from pitstop.bench.variants.handlers import gate
from pitstop.engine.load import LoadMonitor
from pitstop.engine.measurement import Measurement
from pitstop.engine.result import Rows
from pitstop.engine.stages import StagedSearch
from pitstop.engine.timer import TimingPolicy
from pitstop.optimize.outcome import SearchOutcome, Stage, complexity, config_of
from pitstop.optimize.settings import AXES, START, Objective, OptimizeSettings

__all__ = ["AXES", "START", "Objective", "Search", "SearchOutcome", "Stage"]
NO_GRAD = VariantConfig("eval", "no_grad")
EVAL_GRAD = VariantConfig("eval", "grad")  # measured once, so the published no_grad claims can be checked
MEANINGFUL = 1.05  # a single technique combines when faster beyond noise, or by 5% (median)
BORDERLINE = 1.02  # a single just under that line is still re-measured in the final, last, when time allows
TIE = 1.03  # options of one axis within 3% of each other: the simpler one is combined
PROBE_CALLS, FINAL_CALLS = 3, 5  # timed calls every variant gets at least, whatever the budget
_OPTIONS: dict[str, tuple[Any, ...]] = {
    "precision": ("bf16-autocast", "bf16-weights", "fp16-autocast"),
    "compile": ("default", "max-autotune", "reduce-overhead"),
    "quant": ("int8-dynamic",),
    "layout": ("channels_last",),
    "runtime": ("onnxruntime",),
}


class Search(StagedSearch):
    """Runs the stages; ``on_stage(outcome)`` is called after each (to persist partial results)."""

    outcome: SearchOutcome

    def __init__(self, source: Source, settings: OptimizeSettings, env: dict[str, Any], *,
                 on_event: OnEvent | None = None, on_stage: Callable[[SearchOutcome], None] | None = None) -> None:
        settings = settings if settings.batch_size is not None and settings.threads else settings.resolved(source)
        self.source, self.settings, self.env = source, settings, env
        self.group = GroupRunner(source, settings.bench, on_event)
        self.on_stage = on_stage or (lambda outcome: None)
        self.outcome = SearchOutcome()
        self.t0 = time.monotonic()
        self.monitor = LoadMonitor().start()  # the machine before the first measurement (load_before)
        sweeps = any(size != settings.search_batch for size in settings.sweep)
        # the stages' deadline; what is left covers calls past it (every variant gets its minimum
        # of calls) and closing the workers, or the batch-size sweep
        self.limit_s = settings.time_budget_s * (0.75 if sweeps else 0.92)

    # -- stages ---------------------------------------------------------------------------

    def _stages(self) -> None:
        b = self.settings.search_batch
        busy = self.load_before(self.monitor).get("busy")
        probe = [START, *self.singles()]
        if busy:
            probe = [c for c in probe if c.threads is None]
            self.group.one_thread = self.settings.bench.device == "cpu"
            share = (self.env.get("load_at_start") or {}).get("others_cpu_share") or 0
            how = "every variant was measured on one thread and compared by its CPU time per call; " \
                if self.group.one_thread else ""
            self.outcome.notes.append(f"the machine was busy before the search (other processes used {share:.0%} of "
                                      f"the CPU): {how}thread counts were not searched; run again on a quiet "
                                      "machine for wall-time figures and thread counts")
        self._stage("probe", b, probe, self._policy(len(probe), 0.15, 0.05, PROBE_CALLS), first=True)
        # the references run once each, for the ratios users ask about; candidates in replicas
        references = [NO_GRAD, EVAL_GRAD, BASELINE]
        finalists, replicas = self._plan(self.finalists(), references)
        final = [START, *finalists, *references]
        plan = GroupPlan(replicas=replicas, single=tuple(references), memory=True)
        stage = self._stage("final", b, final, self._policy(len(final), 0.7, self.settings.bench.policy.target,
                                                           FINAL_CALLS), plan=plan)
        moved = self.drifted(stage, START.name, b)
        if moved and self.left_s() > stage.elapsed_s:  # measured again: a passing load should not decide
            self.outcome.notes.append(f"final stage measured again: {moved}")
            stage = self._stage("final-2", b, final, self._policy(len(final), 0.9, self.settings.bench.policy.target,
                                                                 FINAL_CALLS), plan=plan)
            moved = self.drifted(stage, START.name, b)
        if moved:
            self.outcome.notes.append(f"the final's comparisons moved while it ran ({moved}; load average "
                                      f"{stage.load.get('loadavg_end', 0):.1f}): the choice may not hold on a "
                                      "quiet machine")
        self._decide()
        sweep = [s for s in self.settings.sweep if s != b]
        self.limit_s = self.settings.time_budget_s
        configs = [START] + ([self.outcome.winner_config] if self.outcome.winner is not None else [])
        for size in sweep:  # the objective needs them: each gets at least one round, even past the budget
            self._stage("sweep", size, configs, self._policy(len(configs), 0.5 / len(sweep), 0.05, FINAL_CALLS))

    def _plan(self, finalists: list[VariantConfig], references: list[VariantConfig]
              ) -> tuple[list[VariantConfig], int]:
        """Fewer replicas, then fewer finalists, until the final's fixed costs (worker start-up,
        compilation, preparation and warm-up, estimated from the probe) fit in 65% of the time left."""
        return self._fit_final(finalists, self.settings.bench.replicas,
                               lambda kept, replicas: self._fixed_cost(kept, references, replicas), 0.65)

    def _fixed_cost(self, finalists: list[VariantConfig], references: list[VariantConfig], replicas: int) -> float:
        """Seconds the final spends before timing, estimated from what the probe measured: worker
        start-up, preparation, fidelity, warm-up, two calls for memory, and compilation, which
        repeats in every replica (inductor's frozen graphs are not cached; an exported ONNX graph
        is reused), and the minimum of timed calls. Padded by a third: start-up contention grows
        with the number of processes."""
        probe = self.outcome.stages[0].rows
        workers = sum(1 for r in probe if r.status != "skipped")
        start = max((r.phases_s.get("start", 0.0) for r in probe), default=0.0) / max(workers, 1)
        profile = [sum(v for k, v in r.phases_s.items() if k in ("prepare", "fidelity", "warmup"))
                   + 2 * (r.warmup or {}).get("per_call_s", 0.0) for r in probe if r.status == "ok"]
        per_process = start + (sorted(profile)[len(profile) // 2] if profile else 0.0)
        cost = per_process * (replicas * (1 + len(finalists)) + len(references))
        per_call = next((r.warmup or {}).get("per_call_s", 0.0) for r in probe if r.variant == START.name)
        cost += FINAL_CALLS * per_call * (replicas * (1 + len(finalists)) + 1.5 * len(references))  # train: slower
        cold = {r.variant: r.compile_s or 0.0 for r in probe}
        default = cold.get(replace(START, compile="default").name, 0.0)
        for config in finalists:
            if config.compile:  # a refinement was not probed: as costly as the default compile
                cost += cold.get(replace(START, compile=config.compile).name, default) * replicas
            if config.runtime != "torch":
                cost += cold.get(replace(START, runtime=config.runtime).name, 0.0)
        return cost * 4 / 3

    def finalists(self) -> list[VariantConfig]:
        """The two most promising combinations of the surviving techniques, compile on reduced
        precision (see ``_composed``) and the best two single techniques, most promising first by
        their predicted speed-up (``_predicted``; at most ``finalists + 1``: when time is short the
        last are dropped), then refinements (``_refined``)."""
        survivors = self._survivors()
        ranked = sorted(survivors.values(), key=lambda p: -p[1])
        combos = self.combinations(survivors)[:2]
        singles = [config for config, _ in ranked][:2]
        composed = self._composed()  # expected at least as fast as its precision alone
        candidates = [c for c in dict.fromkeys([*combos, *([composed] if composed is not None else []), *singles])
                      if self._runnable(c)]
        # a single far faster than any combination (ONNX Runtime on a model eager runs badly) must
        # not be the one dropped when the budget leaves room for one finalist
        rough = bool(self.outcome.stages[0].load.get("busy"))  # a busy probe's speed-ups: no products of them
        predicted = {c: self._predicted(c, survivors, product=not rough) for c in candidates}
        if composed is not None:  # expected at least as fast as the best torch technique alone (see _composed)
            torch_best = [sp for axis, (_, sp) in survivors.items() if axis != "runtime"]
            predicted[composed] = max([predicted[composed], *torch_best])
        candidates.sort(key=lambda c: -predicted[c])  # stable: at a tie, combinations, composed, singles
        finalists = candidates[: self.settings.finalists + 1]
        compiled = next((c for c in finalists if c.compile == "default"), None)
        if compiled is not None and self._refined("compile", "max-autotune"):
            finalists.append(replace(compiled, compile="max-autotune"))  # last: the first dropped when short
        # a single whose probe sat just under the line (2-5% faster, within noise) is measured
        # properly too: otherwise probe noise alone decides whether two runs see it at all
        finalists += [c for c in self._borderline() if c not in finalists][:2]
        return finalists

    def _borderline(self) -> list[VariantConfig]:
        """Probed singles at least ``BORDERLINE`` faster (median) but neither beyond noise nor by
        ``MEANINGFUL`` (so never combined), fastest first."""
        probe = self.outcome.stages[0]
        survivors = {config for options in self._faster().values() for config, _ in options}
        found = []
        for row in probe.rows:
            config = config_of(row)
            c = probe.result.comparison(row.variant, row.batch_size)
            if row.status == "ok" and not (config.plain and config.threads is None) and c is not None \
                    and c.ratio.median >= BORDERLINE and config not in survivors:  # threads count too
                found.append((c.ratio.median, config))
        return [config for _, config in sorted(found, key=lambda p: -p[0])]

    @staticmethod
    def _predicted(config: VariantConfig, survivors: dict[str, tuple[VariantConfig, float]],
                   product: bool = True) -> float:
        """A finalist's expected speed-up: its probe's for a single technique, else the product of
        the probe speed-ups of the surviving techniques it combines; with ``product`` off (a probe
        measured on a busy machine, where one process per variant can read 14x and 80x for two
        techniques that together gain 1.04x) the best of them, so that a combination of rough
        figures never pushes the fastest single technique out of a short final."""
        parts = []
        for axis, (single, speedup) in survivors.items():
            if single == config:
                return speedup
            if axis != "runtime" and getattr(config, axis) == getattr(single, axis) != getattr(START, axis):
                parts.append(speedup)
        return math.prod(parts) if product else max(parts, default=1.0)

    def _composed(self) -> VariantConfig | None:
        """Compile on top of reduced precision, whether or not compile alone survived the probe:
        in eager, autocast pays a cast around every op, which a compiled graph fuses into its
        kernels, so the two compose better than their single speed-ups predict (BERT-base on a
        bf16 CPU: fp32 compile within noise of eager, bf16-autocast + compile 10% faster than
        bf16 alone). Autocast is preferred when it was faster than the start point (bf16 weights
        leave no casts to fuse); None when compile failed, changed the answers or was not probed."""
        compiled = replace(START, compile="default").name
        if not any(r.variant == compiled and r.status == "ok" for r in self.outcome.stages[0].rows):
            return None
        precision = [config for config, _ in self._faster().get("precision", [])]
        autocast = [config for config in precision if config.precision.endswith("-autocast")]
        pick = next(iter(autocast or precision), None)
        return replace(pick, compile="default") if pick is not None else None

    def _refined(self, axis: str, option: Any) -> bool:
        """Options tried as a refinement of a finalist rather than probed alone: on CPU,
        max-autotune tunes the GEMM kernels of the graph the default compile builds (a second
        cold compile of 30 s or more on a large model), so it is tried on the best compiled
        finalist, when time allows."""
        return (axis, option) == ("compile", "max-autotune") and self.settings.bench.device == "cpu"

    def _stage(self, name: str, batch_size: int, configs: list[VariantConfig], policy: TimingPolicy, *,
               first: bool = False, plan: GroupPlan | None = None) -> Stage:
        """One group under ``policy``; ``plan`` (default: one replica each, no memory) says the rest."""
        plan = replace(plan or GroupPlan(replicas=1, memory=False), policy=policy, deadline=self.t0 + self.limit_s)
        result = Rows(model=self.source.name, inputs={}, settings={}, environment=self.env,
                             baseline=START.name)
        stage = Stage(name, result)
        self.outcome.stages.append(stage)
        started = time.monotonic()
        try:
            with self.watched(stage):
                self.group.run(batch_size, configs, result.rows, first=first, plan=plan)
        finally:
            result.inputs = dict(self.group.inputs)
            stage.elapsed_s = time.monotonic() - started
            self.outcome.elapsed_s = time.monotonic() - self.t0
            self.on_stage(self.outcome)
        return stage

    def singles(self) -> list[VariantConfig]:
        """Each technique alone on top of the start point (gated ones become ``skipped`` rows)."""
        configs = [replace(START, **{axis: option}) for axis in self.settings.techniques if axis in _OPTIONS
                   for option in _OPTIONS[axis] if not self._refined(axis, option)]
        if {"runtime", "quant"} <= set(self.settings.techniques):  # ONNX Runtime's own dynamic int8
            configs.append(replace(START, runtime="onnxruntime", quant="int8-dynamic"))
        if "threads" in self.settings.techniques:
            configs += [replace(START, threads=n) for n in _thread_counts(self.settings.resolved_threads)]
        return configs

    def _survivors(self) -> dict[str, tuple[VariantConfig, float]]:
        """Per axis, the technique to combine: among those faster than the start point beyond noise
        or by at least ``MEANINGFUL`` (median), the simplest (earliest option) within ``TIE`` of the
        axis's fastest; a one-process probe cannot tell 3% apart, and simpler recipes are better."""
        best = {}
        for axis, options in self._faster().items():  # options are in probe order: simplest first
            top = max(speedup for _, speedup in options)
            best[axis] = next((c, sp) for c, sp in options if sp >= top / TIE)
        return best

    def _faster(self) -> dict[str, list[tuple[VariantConfig, float]]]:
        """Per axis, the probed options faster than the start point beyond noise or by at least
        ``MEANINGFUL`` (median), with their median speed-ups, in probe order."""
        probe = self.outcome.stages[0]
        faster: dict[str, list[tuple[VariantConfig, float]]] = {}
        for row in probe.rows:
            config = config_of(row)
            comparison = probe.result.comparison(row.variant, row.batch_size)
            if row.status != "ok" or (config.plain and config.threads is None) or comparison is None:
                continue
            ratio = comparison.ratio
            if ratio.ci95[0] > 1.0 or ratio.median >= MEANINGFUL:
                faster.setdefault(_axis_of(config), []).append((config, ratio.median))
        return faster

    def combinations(self, survivors: dict[str, tuple[VariantConfig, float]]) -> list[VariantConfig]:
        """Combinations of two or more surviving axes (ONNX Runtime combines with nothing): the
        two strongest axes together, all of them together, then the rest by the product of their
        single speed-ups; at most four."""
        axes = sorted((a for a in survivors if a != "runtime"), key=lambda a: -survivors[a][1])[:4]

        def combine(subset: tuple[str, ...]) -> VariantConfig:
            config = START
            for axis in subset:
                config = replace(config, **{axis: getattr(survivors[axis][0], axis)})
            return config

        scored = []
        for r in range(2, len(axes) + 1):
            for subset in itertools.combinations(axes, r):
                predicted = 1.0
                for axis in subset:
                    predicted *= survivors[axis][1]
                scored.append((predicted, combine(subset)))
        scored.sort(key=lambda p: -p[0])
        first = [combine(tuple(axes[:2])), combine(tuple(axes))] if len(axes) >= 2 else []
        return [c for c in dict.fromkeys([*first, *(c for _, c in scored)]) if self._runnable(c)][:4]

    def _runnable(self, config: VariantConfig) -> bool:
        """No gate refuses ``config`` here (e.g. bf16 weights + torch.ao int8): never plan what cannot run."""
        return self.group.target is None or gate(config, self.group.target) is None

    # -- the winner -----------------------------------------------------------------------

    def _decide(self) -> None:
        """The winner: in the last stage at the search batch size, the fastest candidate whose
        speed-up interval over the start point excludes 1; a simpler candidate within noise of it
        and within 3% (median) is preferred: a wide interval alone does not make 7% a tie. None of
        them: the start point stays. The start point failed there: no winner at all (``failed``)."""
        stages = [s for s in self.outcome.stages if s.name != "sweep" and s.rows]
        if not stages:
            return
        stage = stages[-1]
        self.outcome.winner_stage, self.outcome.failed = stage, ""
        start = next((r for r in stage.rows if r.variant == START.name), None)
        if start is not None and start.status != "ok":  # nothing to stay with, nothing to compare to
            self.outcome.winner = None
            self.outcome.failed = (f"the start point {START.name} {start.status} in the {stage.name} stage "
                                   f"({start.reason})")
            self.outcome.verdict = f"{self.outcome.failed}; nothing is recommended and no recipe is written"
            return
        faster = []
        for row in stage.rows:
            c = stage.result.comparison(row.variant, row.batch_size)
            if row.status == "ok" and row.variant != START.name and c and c.ratio.ci95[0] > 1.0:
                note = self.busy_choice(stage, row, "thread counts") if config_of(row).threads is not None else None
                if note is None:
                    faster.append((c.ratio.median, row))
                elif note not in self.outcome.notes:
                    self.outcome.notes.append(note)
        self.outcome.winner_stage = stage
        if not faster:
            self.outcome.winner = None
            self.outcome.verdict = (f"no candidate was faster than {START.name} beyond noise "
                                    f"in the {stage.name} stage; the start point stays")
            return
        faster.sort(key=lambda p: -p[0])
        winner, self.outcome.runner_up = self._tie_break(stage, [row for _, row in faster])
        self.outcome.winner = winner
        self.outcome.verdict = f"fastest beyond noise in the {stage.name} stage"
        if self.outcome.runner_up:
            self.outcome.verdict += f"; {self.outcome.runner_up}"

    def _tie_break(self, stage: Stage, ranked: list[Measurement]) -> tuple[Measurement, str]:
        """The fastest of ``ranked`` (fastest first), or a simpler candidate within noise of it and
        within 3% (median), and a sentence naming the runner-up within noise ("" when none): two
        runs that pick either of two near-tied candidates agree within a few percent, and the
        simpler recipe (fewer techniques, no compile or export) is the one to keep."""
        fastest, said = ranked[0], ""
        for row in ranked[1:]:
            vs = stage.result.comparison(fastest.variant, fastest.batch_size, baseline=row.variant)
            if vs is None or vs.ratio.ci95[0] > 1.0:
                continue  # the fastest is faster beyond noise
            r = vs.ratio
            tie = f"{fastest.variant} is {r.median:.2f}x [{r.ci95[0]:.2f}-{r.ci95[1]:.2f}] of {row.variant}"
            if complexity(config_of(row)) < complexity(config_of(fastest)) and r.median < TIE:
                return row, f"within noise of the faster {fastest.variant} ({tie}): the simpler one is kept"
            said = said or f"{row.variant} is within noise of it ({tie}) but not simpler"
        return fastest, said


def _axis_of(config: VariantConfig) -> str:
    """The one technique axis a single-technique config sets."""
    if config.threads is not None:
        return "threads"
    if config.runtime != "torch":
        return "runtime"  # ONNX Runtime, with or without its int8: combines with nothing
    return next(a for a in AXES if a != "threads" and getattr(config, a) != getattr(START, a))


def _thread_counts(default: int) -> list[int]:
    """Thread counts to try besides the default: 1, half and all physical cores."""
    cores = physical_cores()
    return sorted({n for n in (1, max(1, cores // 2), cores) if n != default})

