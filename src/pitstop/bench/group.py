"""One group: several variants of one model at one batch size, each in its own worker(s),
prepared, profiled (memory, fidelity, warm-up) one at a time, then timed in interleaved rounds
until the medians are precise enough or the per-variant budget is spent.

bench runs one group per batch size; optimize runs one per search stage. Nothing is lost: a
variant that cannot run here is ``skipped``, one that breaks is ``failed``, one whose answers
differ is ``rejected``, and the others go on."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from pitstop.bench.fidelity import FIDELITY_FILE, admitted_by_metric, batches, load_metric, score, within
from pitstop.bench.launch import BenchInlineWorker, BenchProcessWorker
from pitstop.bench.variants.config import VariantConfig
from pitstop.bench.variants.handlers import Target, gate
from pitstop.engine.measurement import Measurement
from pitstop.engine.rounds import LiveVariant, OnEvent, WorkerGroup
from pitstop.engine.source import Source, SpecSource, first_forward, write_payload
from pitstop.engine.timer import TimingPolicy
from pitstop.errors import ModelRunError, PitstopError, SettingError
from pitstop.models.inputs import Inputs

if TYPE_CHECKING:
    from pitstop.bench.settings import BenchSettings

Worker = BenchProcessWorker | BenchInlineWorker


@dataclass(frozen=True)
class GroupPlan:
    """How one group runs where it differs from the settings: its timing policy and replicas (the
    settings' by default), a ``deadline`` (``time.monotonic()``) past which timing rounds stop with
    what they have, whether peak and activation memory are measured (two calls per replica), and
    the configs that run in one process whatever ``replicas`` says (``single``)."""

    policy: TimingPolicy | None = None
    replicas: int | None = None
    deadline: float | None = None
    memory: bool = True
    single: tuple[VariantConfig, ...] = ()


class GroupRunner(WorkerGroup):
    """Measures groups of variants for one source under one set of settings."""

    settings: BenchSettings

    def __init__(self, source: Source, settings: BenchSettings, on_event: OnEvent | None = None) -> None:
        super().__init__(source, settings, on_event, "pitstop-")
        self.inputs: dict[int, str] = {}
        self.target: Target | None = None
        self.metric_reference: float | None = None  # the user's metric of the fp32 eval model
        # a busy machine: every variant runs on one thread and is timed by its process's CPU time per
        # call (on 2 cores with both busy, wall time measures the other processes' share of the cores)
        self.one_thread = False

    def run(self, batch_size: int, configs: list[VariantConfig], out: list[Measurement], *,
            first: bool = False, plan: GroupPlan | None = None) -> None:
        """Measure ``configs`` at ``batch_size``, appending each finished row to ``out`` (also on
        Ctrl-C, which is re-raised). A model that cannot run at all raises on the ``first`` group.
        ``plan`` changes the policy, replicas, deadline and memory measurement of this group."""
        plan = plan or GroupPlan()
        policy, replicas = plan.policy or self.settings.policy, plan.replicas or self.settings.replicas
        self._groups += 1
        workdir = self.workdir / f"g{self._groups}"
        workdir.mkdir()
        self.on_event("group", {"batch_size": batch_size, "variants": len(configs)})
        probed = self.settings.isolate and isinstance(self.source, SpecSource)
        try:
            module, inputs = self.source.materialize(batch_size)
            if not probed:  # a module object lives here anyway; a spec's first forward runs in the workers
                first_forward(self.source.name, module, inputs, torch.device(self.settings.device))
        except PitstopError as exc:
            if first:
                raise  # nothing measured yet: a usage error (exit 2)
            out.extend(self._row(c, batch_size, "failed", str(exc)) for c in configs)
            return
        if self.target is None:
            self.target = Target.detect(self.settings.device, module, [t.dim() for t in inputs.tensors()])
        counts = {c: 1 if c in plan.single else replicas for c in configs}
        self._fidelity_batches(module, inputs, workdir)
        live = self._start(module, inputs, batch_size, workdir, counts, self.target, policy)
        if probed and first:
            _check_first_forward(self.source.name, inputs.describe(), live)
        self.inputs[batch_size] = inputs.describe()
        interrupted = False
        try:
            for v in live:
                self._profile(v, plan.memory)
            self._rounds(live, policy, plan.deadline)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            self._finish(live, out, interrupted)

    def _fidelity_batches(self, module: torch.nn.Module, inputs: Any, workdir: Path) -> None:
        """Write the further fidelity batches (``fidelity.pt``, beside the payload: the workers read
        it) and score the reference with the
        user's metric, once per run (the same weights in every group)."""
        s = self.settings
        own = Inputs.coerce(s.fidelity_inputs) if s.fidelity_inputs is not None else None
        spec = getattr(self.source, "input_spec", None)
        if spec is None and hasattr(self.source, "spec"):
            spec = self.source.spec.default_input_spec()
        more = batches(inputs, s.fidelity_samples, s.seed, spec, own)[1:]
        torch.save([(list(b.args), dict(b.kwargs)) for b in more], workdir / FIDELITY_FILE)
        if s.metric and self.metric_reference is None:
            metric = load_metric(s.metric)
            try:
                self.metric_reference = score(metric, module.eval())
            except Exception as exc:
                raise SettingError("metric", f"{s.metric}: scoring the fp32 eval model failed: "
                                 f"{type(exc).__name__}: {exc}") from None

    def _row(self, config: VariantConfig, batch_size: int, status: Any = "ok", reason: str | None = None
             ) -> Measurement:
        return Measurement(config.name, config.to_dict(self.settings.resolved_threads), batch_size, status, reason,
                           variant_config=config)

    def _start(self, module: torch.nn.Module, inputs: Any, batch_size: int, workdir: Path,
               counts: dict[VariantConfig, int], target: Target, policy: TimingPolicy) -> list[LiveVariant]:
        source, inline_reason = self.source.worker_source(module, workdir)
        if not self.settings.isolate:
            inline_reason = "isolation turned off"
        if inline_reason and self.settings.worker_env:
            raise SettingError("worker_env", "needs worker processes; it cannot apply to a model that runs inline")
        self.isolation = f"inline: {inline_reason}" if inline_reason else "process"
        payload = workdir / "payload.pt"
        write_payload(payload, source or {}, module, inputs, batch_size,
                      send_weights=source is not None and source["kind"] == "spec",
                      reference_threads=self.settings.resolved_threads)
        live = [self._spawn(c, batch_size, workdir, None if inline_reason is None else module,
                            n if inline_reason is None else 1, target) for c, n in counts.items()]
        timed = replace(policy, clock="cpu") if self.one_thread and self.settings.device == "cpu" else policy
        for k, v in enumerate(live):  # all workers load in parallel
            for worker in v.workers:  # replicas share a directory: the second reuses the exported graph
                worker.send("setup", payload_path=str(payload), config=v.row.config,
                            threads=1 if self.one_thread else v.config.threads or self.settings.resolved_threads,
                            device=self.settings.device, policy=timed.to_dict(), target=target.to_dict(),
                            workdir=str(workdir / f"v{k}"))
        started = time.monotonic()
        try:
            for v in live:
                for worker in v.workers:  # time-outs run from the send: hung workers do not add up
                    self._receive(v, worker)
                v.row.phases_s["start"] = time.monotonic() - started  # process start, imports, model load
        except KeyboardInterrupt:  # Ctrl-C while the workers load: none may outlive the run
            for v in live:
                for worker in v.workers:
                    worker.kill()
            raise
        return live

    def _spawn(self, config: VariantConfig, batch_size: int, workdir: Path, inline: torch.nn.Module | None,
               replicas: int, target: Target) -> LiveVariant:
        """Worker processes for the variant, or one inline worker holding ``inline``; none when the
        variant cannot run here (``skipped``, with the gate's reason)."""
        reason = gate(config, target)
        if reason:
            return LiveVariant(config, self._row(config, batch_size, "skipped", reason), [])
        threads = config.threads or self.settings.resolved_threads
        row = self._row(config, batch_size)
        if inline is not None:
            return LiveVariant(config, row, [BenchInlineWorker(inline)])
        env = {"TORCHINDUCTOR_CACHE_DIR": str(self.workdir / "inductor"),  # cold compile once per run
               **dict(self.settings.worker_env)}
        first = len(list(workdir.iterdir()))
        workers: list[Worker] = [BenchProcessWorker(workdir / f"{first + i}.log", threads, env)
                                 for i in range(replicas)]
        return LiveVariant(config, row, workers)

    def _profile(self, v: LiveVariant, memory: bool = True) -> None:
        """Preparation (compile, export), memory, fidelity and warm-up of one variant's replicas,
        while the others wait. Each phase's seconds are kept in ``row.phases_s``."""
        if not v.alive:
            return
        self.on_event("phase", {"text": f"b={v.row.batch_size} {v.row.variant}: prepare, fidelity, warm-up"})
        peaks = []
        for i, worker in enumerate(v.workers):
            prepared = self._timed(v, worker, "prepare")
            if prepared is None:
                return
            if memory:
                measured = self._timed(v, worker, "memory")
                if measured is None:
                    return
                peaks.append(measured["peak_memory_bytes"])
                v.row.activation_bytes = measured["activation_bytes"]  # exact: the same in every replica
            if i == 0:
                v.row.details = prepared["details"]
                if v.config.compile or v.config.quant or v.config.runtime != "torch":  # first replica: cold cache
                    v.row.compile_s = prepared["first_call_s"]
                v.row.fidelity = self._timed(v, worker, "fidelity")  # same weights and inputs everywhere
                if v.row.fidelity is not None:
                    self._gate(v, worker)
            warmup = self._timed(v, worker, "warmup")
            if warmup is None:
                return
            v.warmed(warmup)
        known = sorted(p for p in peaks if p is not None)
        v.row.peak_memory_bytes = known[len(known) // 2] if known else None

    def _timed(self, v: LiveVariant, worker: Worker, method: str) -> Any:
        start = time.monotonic()
        try:
            return self._call(v, worker, method)
        finally:
            v.row.phases_s[method] = v.row.phases_s.get(method, 0.0) + time.monotonic() - start

    def _gate(self, v: LiveVariant, worker: Worker) -> None:
        """A wrong answer is rejected; train mode's different answers are noted, not rejected.

        Reduced precision and int8 get a looser tolerance plus an argmax-agreement floor; an fp32
        variant over tolerance is checked against fp64, and passes if it is at least as close to
        the fp64 answer as eager fp32 is (a compiled graph may be the more accurate one)."""
        fid, s = v.row.fidelity or {}, self.settings
        reduced = v.config.precision != "fp32" or v.config.quant is not None
        tol, agreement = (s.reduced_tol, s.min_agreement) if reduced else (s.rel_tol, None)
        if s.metric and "error" not in fid and v.config.mode == "eval":
            self._gate_metric(v, worker, fid, within(fid, tol, agreement))
            return
        if within(fid, tol, agreement):
            return
        if "error" not in fid and not reduced and v.config.mode == "eval":
            fid.update(self._call(v, worker, "fidelity64") or {})
            if fid.get("rel_err_fp64", float("inf")) <= max(tol, fid.get("eager_rel_err_fp64", 0.0)):
                v.row.note = (f"differs from eager fp32 by {fid['rel_err']:.1e} but is as close to fp64 "
                              f"({fid['rel_err_fp64']:.1e} vs eager {fid['eager_rel_err_fp64']:.1e})")
                return
        detail = fid.get("error") or f"rel err {fid['rel_err']:.2e} > tolerance {tol:.0e}"
        if "error" not in fid and agreement is not None and not within(fid, math.inf, agreement):
            detail = (f"argmax agreement {fid.get('agreement_margin', fid['agreement']):.1%} < {agreement:.0%} "
                      f"on {fid.get('samples', '?')} samples, flips between near-tied logits excused "
                      f"(raw {fid['agreement']:.1%}; rel err {fid['rel_err']:.1e})")
        if v.config.mode == "train":
            v.row.note = f"train mode changes the outputs (dropout / batch-norm): {detail}"
        else:
            v.row.status, v.row.reason = "rejected", f"outputs differ from the fp32 eval reference: {detail}"

    def _gate_metric(self, v: LiveVariant, worker: Worker, fid: dict[str, Any], close: bool) -> None:
        """With the user's metric, the metric decides: admitted when the candidate's score is within
        ``metric_tolerance`` of the reference's, whatever its outputs' error (``close``: the default gate)."""
        s = self.settings
        found = self._call(v, worker, "metric", spec=s.metric)
        if found is None:
            return  # the call failed: the variant is already failed with the reason
        fid.update(found, metric_reference=self.metric_reference)
        if admitted_by_metric(fid, s.metric_tolerance):
            if not close:
                v.row.note = (f"admitted by the metric ({fid['metric']:.4g} vs reference "
                              f"{fid['metric_reference']:.4g}, tolerance {s.metric_tolerance:g}) although "
                              f"its outputs moved (rel err {fid['rel_err']:.1e})")
            return
        v.row.status, v.row.reason = "rejected", (
            f"metric {fid['metric']:.4g} < reference {fid['metric_reference']:.4g} - tolerance {s.metric_tolerance:g}")

    def _took(self, v: LiveVariant, i: int, chunk: dict[str, Any]) -> None:
        v.row.page_faults += chunk["page_faults"]

    def _finish(self, live: list[LiveVariant], out: list[Measurement], interrupted: bool) -> None:
        for v in live:
            for worker in v.workers:
                worker.kill() if interrupted else worker.close()
            if interrupted and v.alive:
                if v.row.samples_s:
                    v.row.note = f"interrupted after {len(v.row.samples_s)} timed calls"
                else:
                    v.row.status, v.row.reason = "failed", "interrupted before any timed call"
            out.append(v.row)
            self.on_event("row", {"row": v.row})


def _check_first_forward(name: str, described: str, live: list[LiveVariant]) -> None:
    """The model's first forward ran in the workers' set-up (the fp32 eval reference): when it
    failed in every one of them (raised, exited, hung past its timeout), the model cannot run
    here at all, a ``ModelRunError`` (exit 2) rather than a table of failed rows."""
    started = [v for v in live if v.workers]
    if started and not any(v.alive for v in started):
        reason = started[0].row.reason or "failed"
        raise ModelRunError(f"model {name}: the first forward on {described} failed: "
                            f"{reason.removeprefix('setup raised ')}")
