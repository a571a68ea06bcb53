"""One group of generation variants at one batch size, each in its own worker process(es):
prepared (compile timed), gated on tokens, memory-measured, warmed up, then timed in interleaved
rounds by bench's skeleton (``bench.rounds``). Nothing is lost: a variant that cannot run here is
``skipped``, one that breaks is ``failed``, one whose tokens differ is ``rejected``."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pitstop.engine import forkserver
from pitstop.engine.launch import ProcessWorker
from pitstop.engine.measurement import Measurement
from pitstop.engine.rounds import LiveVariant, OnEvent, WorkerGroup
from pitstop.engine.timer import TimingPolicy
from pitstop.generate.settings import GenerateSettings
from pitstop.generate.techniques import GenConfig, gate
from pitstop.generate.tokens import judge


class GenerateWorker(ProcessWorker):
    """A worker process serving a ``GenerateSession``."""

    MODULE = "pitstop.generate.session"


@dataclass
class GenMeasurement(Measurement):
    """A generation variant at one batch size: each timed call is one whole ``generate``;
    ``prefill_s`` and ``decode_s`` (per token, each call's mean) split it, ``steps_s`` holds every
    stamped decode step."""

    stage: str = ""
    prefill_s: list[float] = field(default_factory=list)
    decode_s: list[float] = field(default_factory=list)
    steps_s: list[float] = field(default_factory=list)
    gen_config: GenConfig | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Prompts:
    """The token ids one batch size is measured on: the timing batch and the fidelity batches."""

    timing: torch.Tensor
    fidelity: list[torch.Tensor]


class GenerateGroup(WorkerGroup):
    """Measures groups of generation variants of one model under one set of settings."""

    settings: GenerateSettings

    def __init__(self, model: dict[str, Any], settings: GenerateSettings, on_event: OnEvent | None = None) -> None:
        super().__init__(model, settings, on_event, "pitstop-generate-")
        self.model = model  # the payload's model part: {"kind": "spec", "spec", "seed", "weights"} or a pickle,
        # and "hf": whether it generates with transformers' generate()

    def run(self, prompts: Prompts, configs: list[GenConfig], out: list[GenMeasurement], *, stage: str,
            policy: TimingPolicy, replicas: int, deadline: float | None = None) -> None:
        """Measure ``configs`` on ``prompts``, appending each finished row to ``out`` (also on Ctrl-C)."""
        self._groups += 1
        workdir = self.workdir / f"g{self._groups}"
        workdir.mkdir()
        batch = int(prompts.timing.shape[0])
        self.on_event("group", {"batch_size": batch, "variants": len(configs)})
        payload = workdir / "payload.pt"
        torch.save({**self.model, "prompts": prompts.timing, "fidelity": prompts.fidelity,
                    "new_tokens": self.settings.new_tokens, "reference_threads": self.settings.resolved_threads},
                   payload)
        live = [self._spawn(c, batch, workdir, replicas, stage) for c in configs]
        interrupted = False
        try:
            self._setup(live, payload, workdir, policy)
            for v in live:
                self._profile(v)
            self._rounds(live, policy, deadline)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            self._close_rows(live, out, interrupted, "call")  # ``_spawn`` makes every row a GenMeasurement

    def _spawn(self, config: GenConfig, batch: int, workdir: Path, replicas: int, stage: str) -> LiveVariant:
        threads = self.settings.resolved_threads
        row = GenMeasurement(config.name, config.to_dict(threads), batch, stage=stage, gen_config=config)
        reason = gate(config, self.settings.device, batch, self.settings.allow_emulated, self.model.get("hf", True))
        if reason:
            row.status, row.reason = "skipped", reason
            return LiveVariant(config, row, [])
        env = {"TORCHINDUCTOR_CACHE_DIR": str(self.workdir / "inductor"), **dict(self.settings.worker_env)}
        if self.model.get("hf", True) and not getattr(self, "_preloaded", False):
            # every worker of a transformers model imports these (its lazy submodules: 4.5 s of a worker)
            forkserver.preload(["transformers", "transformers.modeling_utils", "transformers.generation"])
            self._preloaded = True
        first = len(list(workdir.iterdir()))
        workers = [GenerateWorker(workdir / f"{first + i}.log", config.threads or threads, env)
                   for i in range(replicas)]
        return LiveVariant(config, row, workers)

    def _setup(self, live: list[LiveVariant], payload: Path, workdir: Path, policy: TimingPolicy) -> None:
        for k, v in enumerate(live):  # all workers load (and generate the reference) in parallel
            for worker in v.workers:
                worker.send("setup", payload_path=str(payload), config=v.row.config,
                            threads=v.config.threads or self.settings.resolved_threads, device=self.settings.device,
                            policy=policy.to_dict(), workdir=str(workdir / f"v{k}"))
        started = time.monotonic()
        try:
            for v in live:
                for worker in v.workers:
                    self._receive(v, worker)
                v.row.phases_s["start"] = time.monotonic() - started
        except KeyboardInterrupt:
            for v in live:
                for worker in v.workers:
                    worker.kill()
            raise

    def _profile(self, v: LiveVariant) -> None:
        """Prepare (compile), fidelity and memory on the first replica, warm-up on each."""
        if not v.alive:
            return
        self.on_event("phase", {"text": f"b={v.row.batch_size} {v.row.variant}: prepare, tokens, warm-up"})
        for i, worker in enumerate(v.workers):
            prepared = self._call(v, worker, "prepare")
            if prepared is None:
                return
            if i == 0:
                v.row.details = prepared["details"]
                v.row.compile_s = prepared["first_call_s"]
                fid = self._call(v, worker, "fidelity")
                if fid is None:
                    return
                v.row.fidelity = fid
                s = self.settings
                reason, note = judge(fid, v.config.lossless, s.gate, s.tolerance)
                v.row.note = note
                if reason:
                    v.reject(reason)
                    if not s.bench_only:  # a search does not spend its budget timing what it cannot choose
                        for w in v.workers:
                            w.close()
                        return
                memory = self._call(v, worker, "memory")
                if memory is None:
                    return
                v.row.peak_memory_bytes = memory["peak_memory_bytes"]
                v.row.details["kv_cache_bytes"] = memory.get("kv_cache_bytes")
            warmup = self._call(v, worker, "warmup")
            if warmup is None:
                return
            v.warmed(warmup)

    def _took(self, v: Any, i: int, chunk: dict[str, Any]) -> None:
        row: GenMeasurement = v.row
        row.prefill_s.extend(t for t in chunk["prefill"] if t >= 0)  # -1: a model's own generate(), not split
        row.decode_s.extend(t for t in chunk["decode"] if t >= 0)
        row.steps_s.extend(chunk["steps"])


def policy_for(seconds_per_variant: float, rounds: int = 2) -> TimingPolicy:
    """A stage's timing policy: about ``seconds_per_variant`` of timed calls each, in rounds."""
    budget = max(0.5, seconds_per_variant)
    return TimingPolicy(target=0.02, budget_s=budget, min_samples=5, round_s=budget / max(1, rounds),
                        min_rounds=rounds, warmup_min_calls=2, warmup_window=3, warmup_tol=0.1,
                        warmup_max_s=max(0.5, min(5.0, 0.3 * budget)))


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by the nearest rank, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
