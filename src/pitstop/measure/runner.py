"""The bench scenario: for each batch size, every variant in its own worker, timed in
interleaved rounds until the medians are precise enough or the budget is spent.

Nothing is lost: a failing variant becomes a ``failed`` row; the JSON file is rewritten after
every batch size; Ctrl-C finalises what was measured and marks the run interrupted."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pitstop._env import environment
from pitstop.errors import PitstopError, UsageError
from pitstop.measure.fidelity import within
from pitstop.measure.launch import InlineWorker, ProcessWorker, WorkerFailed
from pitstop.measure.measurement import BenchResult, Measurement
from pitstop.measure.source import ModuleSource, SpecSource, first_forward, write_payload
from pitstop.measure.timer import TimingPolicy, chunk_size, precise_enough
from pitstop.measure.variants import BASELINE, GRAD_MODES, VariantConfig

Source = SpecSource | ModuleSource
OnEvent = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class BenchSettings:
    """What to measure and how; every field is recorded in the JSON ``settings``."""

    batch_sizes: tuple[int, ...]
    threads: int
    variants: tuple[VariantConfig, ...] = GRAD_MODES
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    timeout_s: float = 300.0  # a single worker request (set-up, one round) longer than this fails
    device: str = "cpu"
    seed: int = 0
    isolate: bool = True
    replicas: int = 3  # worker processes per variant: processes differ, so the process is sampled too
    rel_tol: float = 1e-4  # fp32 variants must match the fp32 eval reference this closely
    worker_env: tuple[tuple[str, str], ...] = ()  # extra environment of every worker (allocator tunables)

    def __post_init__(self) -> None:
        if not self.batch_sizes or any(b < 1 for b in self.batch_sizes):
            raise UsageError(f"--batch-sizes: need positive integers, got {list(self.batch_sizes)}")
        if self.threads < 1:
            raise UsageError(f"--threads: need at least 1, got {self.threads}")
        if not self.variants:
            raise UsageError("--variants: need at least one variant")
        if self.timeout_s <= 0:
            raise UsageError(f"--timeout-s must be positive, got {self.timeout_s}")
        if self.replicas < 1:
            raise UsageError(f"--replicas: need at least 1, got {self.replicas}")

    @property
    def baseline(self) -> str:
        """``train+grad`` when measured, else the first variant."""
        names = [v.name for v in self.variants]
        return BASELINE.name if BASELINE.name in names else names[0]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "batch_sizes": list(self.batch_sizes), "variants": [v.name for v in self.variants],
            "threads": self.threads, "device": self.device, "seed": self.seed,
            "timeout_s": self.timeout_s, "isolate": self.isolate, "replicas": self.replicas,
            "tolerance_rel": self.rel_tol,
            "worker_env": dict(self.worker_env),
            "timing": self.policy.to_dict(),
        }


Worker = ProcessWorker | InlineWorker


@dataclass
class _Live:
    """A variant's run-time state within one batch-size group: its replica workers."""

    config: VariantConfig
    row: Measurement
    workers: list[Worker]
    per_call_s: list[float] = field(default_factory=list)
    spent_s: float = 0.0

    @property
    def alive(self) -> bool:
        return self.row.status != "failed"

    def fail(self, reason: str) -> None:
        """Mark the variant failed (one replica's failure fails the variant) and stop its workers."""
        if self.alive:
            self.row.status, self.row.reason = "failed", reason
        for worker in self.workers:
            worker.kill()


class BenchRunner:
    """Runs a bench; ``on_event(kind, info)`` reports progress; ``sink(result)`` persists."""

    def __init__(self, source: Source, settings: BenchSettings, *,
                 on_event: OnEvent | None = None, sink: Callable[[BenchResult], None] | None = None) -> None:
        self.source, self.settings = source, settings
        self.on_event = on_event or (lambda kind, info: None)
        self.sink = sink or (lambda result: None)
        env = environment(settings.threads, settings.seed)
        env["device"] = settings.device
        self.result = BenchResult(
            model=source.name, inputs={}, settings=settings.to_dict(), environment=env,
            baseline=settings.baseline,
            claims_key=source.spec.text if isinstance(source, SpecSource) else None,
        )

    def run(self) -> BenchResult:
        """Measure every batch size; returns the result (also on Ctrl-C, marked interrupted)."""
        threads_before = torch.get_num_threads()
        try:
            for i, batch_size in enumerate(self.settings.batch_sizes):
                self._run_batch(batch_size, first=i == 0)
            self.result.complete = True
        except KeyboardInterrupt:
            self.result.interrupted = True
        finally:
            torch.set_num_threads(threads_before)
            self.sink(self.result)
        return self.result

    def _run_batch(self, batch_size: int, first: bool) -> None:
        self.on_event("group", {"batch_size": batch_size, "variants": len(self.settings.variants)})
        with tempfile.TemporaryDirectory(prefix="pitstop-") as tmp:
            try:
                module, inputs = self.source.materialize(batch_size)
                first_forward(self.source.name, module, inputs, torch.device(self.settings.device))
            except PitstopError as exc:
                if first:
                    raise  # nothing measured yet: a usage error (exit 2)
                self._fail_all(batch_size, str(exc))
                return
            self.result.inputs[batch_size] = inputs.describe()
            live = self._start(module, inputs, batch_size, Path(tmp))
            try:
                self._measure(live)
            except KeyboardInterrupt:
                self.result.interrupted = True
                raise
            finally:
                self._finish(live)

    def _start(self, module: torch.nn.Module, inputs: Any, batch_size: int, workdir: Path) -> list[_Live]:
        source, inline_reason = self.source.worker_source(module, workdir)
        if not self.settings.isolate:
            inline_reason = "isolation turned off (--inline)"
        if inline_reason and self.settings.worker_env:
            raise UsageError("--worker-env needs worker processes; it cannot apply to a model that runs inline")
        self.result.environment["isolation"] = f"inline: {inline_reason}" if inline_reason else "process"
        payload = workdir / "payload.pt"
        write_payload(payload, source or {}, module, inputs, batch_size,
                      send_weights=source is not None and source["kind"] == "spec")
        replicas = self.settings.replicas if inline_reason is None else 1
        live = [self._spawn(c, batch_size, workdir, None if inline_reason is None else module, replicas)
                for c in self.settings.variants]
        for v in live:  # all workers load in parallel
            for worker in v.workers:
                worker.send("setup", payload_path=str(payload), config=v.row.config,
                            threads=v.config.threads or self.settings.threads,
                            device=self.settings.device, policy=self.settings.policy.to_dict())
        for v in live:
            for worker in v.workers:
                self._receive(v, worker)
        return live

    def _spawn(self, config: VariantConfig, batch_size: int, workdir: Path, inline: torch.nn.Module | None,
               replicas: int) -> _Live:
        """Worker processes for the variant, or one inline worker holding ``inline``."""
        threads = config.threads or self.settings.threads
        row = Measurement(config.name, config.to_dict(self.settings.threads), batch_size)
        env = dict(self.settings.worker_env)
        if inline is not None:
            return _Live(config, row, [InlineWorker(inline)])
        first = len(list(workdir.iterdir()))
        workers: list[Worker] = [ProcessWorker(workdir / f"{first + i}.log", threads, env) for i in range(replicas)]
        return _Live(config, row, workers)

    def _measure(self, live: list[_Live]) -> None:
        for v in live:
            self._profile(v)
        self._rounds(live)

    def _profile(self, v: _Live) -> None:
        """Memory, fidelity and warm-up of one variant's replicas, while the others wait."""
        self.on_event("phase", {"text": f"b={v.row.batch_size} {v.row.variant}: memory, fidelity, warm-up"})
        peaks = []
        for i, worker in enumerate(v.workers):
            memory = self._call(v, worker, "memory")
            if memory is None:
                return
            peaks.append(memory["peak_memory_bytes"])
            v.row.activation_bytes = memory["activation_bytes"]  # exact: the same in every replica
            if i == 0:
                v.row.fidelity = self._call(v, worker, "fidelity")  # same weights and inputs everywhere
            warmup = self._call(v, worker, "warmup")
            if warmup is None:
                return
            v.row.warmup = v.row.warmup or warmup
            v.per_call_s.append(warmup["per_call_s"])
            v.row.replica_samples_s.append([])
        known = sorted(p for p in peaks if p is not None)
        v.row.peak_memory_bytes = known[len(known) // 2] if known else None
        if v.row.fidelity is not None:
            self._gate(v)

    def _gate(self, v: _Live) -> None:
        """A wrong answer is rejected; train mode's different answers are noted, not rejected."""
        fid, tol = v.row.fidelity or {}, self.settings.rel_tol
        if within(fid, tol):
            return
        detail = fid.get("error") or f"rel err {fid['rel_err']:.2e} > tolerance {tol:.0e}"
        if v.config.mode == "train":
            v.row.note = f"train mode changes the outputs (dropout / batch-norm): {detail}"
        else:
            v.row.status, v.row.reason = "rejected", f"outputs differ from the fp32 eval reference: {detail}"

    def _rounds(self, live: list[_Live]) -> None:
        policy, round_no = self.settings.policy, 0
        while True:
            alive = [v for v in live if v.alive]
            active = [v for v in alive if v.spent_s < policy.budget_s]
            if not active or all(precise_enough(v.row.replica_samples_s, policy) for v in alive):
                return
            turns = [(v, i) for i in range(max(len(v.workers) for v in active)) for v in active
                     if i < len(v.workers)]
            shift = round_no % len(turns)  # rotate the order so nothing always runs first
            for v, i in turns[shift:] + turns[:shift]:
                self._turn(v, i, policy)
            round_no += 1
            self.on_event("round", {"round": round_no, "live": live, "policy": policy})

    def _turn(self, v: _Live, i: int, policy: TimingPolicy) -> None:
        """One replica's share of a round: about ``round_s / replicas`` of timed calls."""
        if not v.alive:
            return
        per_call, replicas = v.per_call_s[i], len(v.workers)
        left = (policy.budget_s - v.spent_s) / replicas
        n = min(chunk_size(per_call, policy, replicas), max(1, int(left / max(per_call, 1e-9))))
        chunk = self._call(v, v.workers[i], "run", n=n)
        if chunk:
            v.row.replica_samples_s[i].extend(chunk["times"])
            v.row.page_faults += chunk["page_faults"]
            v.spent_s += sum(chunk["times"])

    def _finish(self, live: list[_Live]) -> None:
        for v in live:
            for worker in v.workers:
                worker.kill() if self.result.interrupted else worker.close()
            if self.result.interrupted and v.alive:
                if v.row.samples_s:
                    v.row.note = f"interrupted after {len(v.row.samples_s)} timed calls"
                else:
                    v.row.status, v.row.reason = "failed", "interrupted before any timed call"
            self.result.rows.append(v.row)
            self.on_event("row", {"row": v.row})
        self.sink(self.result)

    def _call(self, v: _Live, worker: Worker, method: str, **kwargs: Any) -> Any:
        if not v.alive:
            return None
        worker.send(method, **kwargs)
        return self._receive(v, worker)

    def _receive(self, v: _Live, worker: Worker) -> Any:
        if not v.alive:
            return None
        try:
            return worker.receive(self.settings.timeout_s)
        except WorkerFailed as exc:
            v.fail(str(exc))
            return None

    def _fail_all(self, batch_size: int, reason: str) -> None:
        for config in self.settings.variants:
            row = Measurement(config.name, config.to_dict(self.settings.threads), batch_size,
                              status="failed", reason=reason)
            self.result.rows.append(row)
            self.on_event("row", {"row": row})
        self.sink(self.result)
