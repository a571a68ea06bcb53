"""The generation search: each technique probed alone on top of the reference, the ones that
help combined (one per slot: weights, decoding (static cache, compile, prompt lookup), attention,
threads), the finalists timed interleaved with the reference in several workers, the fastest whose speed-up interval
excludes 1 kept, then the reference and the winner at the other batch sizes.

Budget: 45% probe, 40% final, 15% the other batch sizes; past a stage's deadline rounds stop
once every variant has its minimum of calls. ``bench_only`` measures the probe's grid and stops."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pitstop.engine.load import LoadMonitor, merge
from pitstop.engine.rounds import OnEvent
from pitstop.generate.group import GenerateGroup, GenMeasurement, Prompts, policy_for
from pitstop.generate.settings import GenerateSettings
from pitstop.generate.techniques import REFERENCE, GenConfig, singles
from pitstop.stats import Ratio, speedup_groups

PAYS = 1.05  # a probe faster beyond noise, or by 5% (median), is combined: as train's MEANINGFUL (a 3% median
# of one probe process is noise here: phi's eager attention "paid" in one search and cost 5% in the next)
SIMPLER_WITHIN = 0.03  # a simpler finalist within 3% and within noise of the fastest is preferred


@dataclass
class GenerateOutcome:
    """What the search measured and chose."""

    rows: list[GenMeasurement] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)
    winner: GenConfig = REFERENCE
    speedup: Ratio | None = None
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    complete: bool = False


def slot(config: GenConfig) -> str:
    """Which choice a technique makes: only one technique per slot goes into a combination."""
    if config.dtype != "fp32" or config.quant:
        return "weights"
    if config.cache != "dynamic" or config.compile or config.lookup:
        return "decoding"  # prompt lookup overflows a static cache sized for the new tokens: one or the other
    return "attention" if config.attention != "sdpa" else "threads"


def ratio(reference: GenMeasurement | None, row: GenMeasurement) -> Ratio | None:
    """Speed-up of a row's generate calls over the reference's in the same stage (None unmeasured)."""
    if reference is None or not reference.measured or not row.measured:
        return None
    return speedup_groups(reference.replica_samples_s, row.replica_samples_s)


def candidates(probe: list[GenMeasurement], limit: int = 4) -> list[GenConfig]:
    """The finalists: the best admitted technique of each slot that paid, combined; a compiled
    decoding step with the fastest admitted weights, even when neither paid alone (reduced weights
    pay once the step is compiled, where eager dispatch hid them: optimize tries compile on top of
    reduced precision for the same reason; OPT-style: bf16 1.08x, compile 1.00x, both 1.24x); the
    compiled decoding step itself, the anchors' recipe, even when the one-process probe did not see
    it pay (Mistral-style, run 6: the probe kept the reference, the grid measured static cache +
    compile at 1.22x); that combination without its weakest part; and the best single technique. A finalist
    compiled in another mode than the default is followed by its default-mode sibling (the
    probe's lead of max-autotune is often one process's kernel choice: on three causal LMs the grid
    measured it at 0.89-1.04x of default compile in other processes)."""
    ref = next((r for r in probe if r.gen_config == REFERENCE), None)
    paid: dict[str, tuple[float, GenConfig]] = {}
    weights: list[tuple[float, GenConfig]] = []
    compiled: list[tuple[float, GenConfig]] = []
    for row in probe:
        r = ratio(ref, row)
        if row.status != "ok" or row.gen_config in (None, REFERENCE) or r is None:
            continue
        s = slot(row.gen_config)
        if s == "weights":
            weights.append((r.median, row.gen_config))
        if row.gen_config.compile:
            compiled.append((r.median, row.gen_config))
        if (r.median >= PAYS or r.ci95[0] > 1.0) and (s not in paid or r.median > paid[s][0]):
            paid[s] = (r.median, row.gen_config)
    best = sorted(paid.values(), key=lambda x: -x[0])
    found: list[GenConfig] = []
    decoding = paid.get("decoding", (0.0, REFERENCE))[1]
    if not decoding.compile and compiled:  # compiled, reduced weights can pay where neither paid alone
        decoding = max(compiled, key=lambda x: (x[1].compile == "default", x[0]))[1]
    fused = decoding.combined(max(weights, key=lambda x: x[0])[1]) if decoding.compile and weights else None
    def combined(parts: list[tuple[float, GenConfig]]) -> GenConfig:
        config = REFERENCE
        for _, c in parts:
            config = config.combined(c)
        return config

    found += [combined(best)] if best else []
    found += [fused] if fused else []
    found += [decoding] if decoding.compile else []  # the anchors' recipe, whether or not it paid in one process
    found += [combined(best[:-1])] if len(best) > 2 else []  # without its weakest part
    found += [best[0][1]] if best else []
    found = [x for c in found for x in ((c, replace(c, compile="default")) if c.compile not in (None, "default")
                                        else (c,))]  # each tuned one beside its default-mode sibling
    return list(dict.fromkeys(found))[:limit]


class GenerateSearch:
    """Runs the stages; ``on_stage(outcome)`` persists after each one."""

    def __init__(self, model: dict[str, Any], prompts: Callable[[int], Prompts], settings: GenerateSettings,
                 on_event: OnEvent | None = None, on_stage: Callable[[GenerateOutcome], None] | None = None) -> None:
        self.settings, self.prompts = settings, prompts
        self.group = GenerateGroup(model, settings, on_event)
        self.on_event = on_event or (lambda kind, info: None)
        self.on_stage = on_stage or (lambda outcome: None)
        self.outcome = GenerateOutcome()
        self.start = time.monotonic()

    def run(self) -> GenerateOutcome:
        """Every stage; returns the outcome (also on Ctrl-C, marked interrupted)."""
        s, out = self.settings, self.outcome
        try:
            grid = [REFERENCE, *singles(s.techniques, s.device, s.resolved_threads)]
            probe = self._stage("probe", s.search_batch, grid, 1.0 if s.bench_only else 0.45, replicas=1)
            if s.bench_only:
                out.complete = True
                return out
            finalists = candidates(probe)
            if finalists:
                final = self._stage("final", s.search_batch, [REFERENCE, *finalists], 0.85, replicas=s.replicas)
                self._decide(final)
            else:
                out.notes.append("no technique was measured faster than the reference beyond noise or by 5% or "
                                 "more in the probe: the reference stays")
            for batch in s.batch_sizes[1:]:
                configs = list(dict.fromkeys([REFERENCE, out.winner]))
                self._stage(f"batch {batch}", batch, configs, 1.0, replicas=1)
            out.complete = True
        except KeyboardInterrupt:
            out.interrupted = True
        finally:
            self.group.close()
            self.on_stage(out)
        return out

    def _stage(self, name: str, batch: int, configs: list[GenConfig], until: float, replicas: int
               ) -> list[GenMeasurement]:
        """Measure ``configs`` at ``batch`` until ``until`` (share of the budget from the start)."""
        s = self.settings
        deadline = self.start + until * s.time_budget_s
        left = max(1.0, deadline - time.monotonic())
        live = sum(1 for _ in configs)
        policy = policy_for(0.35 * left / max(1, live) / replicas)
        self.on_event("stage", {"name": name, "variants": live})
        rows: list[GenMeasurement] = []
        monitor = LoadMonitor().start()
        try:
            self.group.run(self.prompts(batch), configs, rows, stage=name, policy=policy, replicas=replicas,
                           deadline=deadline)
        finally:
            load = monitor.stop()
            self.outcome.rows.extend(rows)
            self.outcome.stages.append({"name": name, "batch_size": batch, "variants": [c.name for c in configs],
                                        "seconds": time.monotonic() - monitor.t0, "load": load})
            self.on_stage(self.outcome)
        return rows

    def _decide(self, final: list[GenMeasurement]) -> None:
        """The fastest admitted finalist whose interval excludes 1; a simpler one within 3% and noise preferred."""
        ref = next((r for r in final if r.gen_config == REFERENCE), None)
        busy = merge([st["load"] for st in self.outcome.stages]).get("busy")
        scored = []
        for row in final:
            r = ratio(ref, row)
            if row.gen_config in (None, REFERENCE) or row.status != "ok" or r is None or r.verdict != "faster":
                continue
            if busy and row.gen_config.threads:
                self.outcome.notes.append(f"{row.variant} not chosen: other processes took the CPU while it was "
                                          "measured, and a thread count measured on a busy machine says more about "
                                          "them than about the model")
                continue
            scored.append((r, row))
        if not scored:
            self.outcome.notes.append("no finalist was faster than the reference beyond noise: the reference stays")
            return
        fastest = max(scored, key=lambda x: x[0].median)
        close = [x for x in scored if x[0].median >= fastest[0].median * (1 - SIMPLER_WITHIN)
                 and x[1].gen_config.size < fastest[1].gen_config.size]  # type: ignore[union-attr]
        if close:
            simpler = min(close, key=lambda x: x[1].gen_config.size)  # type: ignore[union-attr]
            a, b = simpler[1], fastest[1]
            if speedup_groups(a.replica_samples_s, b.replica_samples_s).verdict == "within noise":
                self.outcome.notes.append(f"{a.variant} chosen over {b.variant}: within 3% and within noise, "
                                          "with fewer techniques")
                fastest = simpler
        self.outcome.winner = fastest[1].gen_config  # type: ignore[assignment]
        self.outcome.speedup = fastest[0]
