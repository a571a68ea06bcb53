"""Training variants measured side by side: each in its own worker processes, its first step
checked against the fp32 gradients, its trajectory (when asked) judged against the reference
band, then timed in interleaved rounds until precise enough or out of time.

The naive step's replicas are the fp32 reference seeds: replica ``i`` trains with seed ``i``, its
trajectory gives that seed's loss curve, and its steps are timed like everyone else's."""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pitstop.engine.measurement import Measurement
from pitstop.engine.rounds import LiveVariant, OnEvent, WorkerGroup
from pitstop.engine.source import ModuleSource, SpecSource
from pitstop.engine.timer import TimingPolicy
from pitstop.errors import ModelRunError, ReferenceFailed, SettingError, UsageError
from pitstop.train import fidelity
from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.launch import InlineTrainWorker, TrainProcessWorker, WorkerFailed
from pitstop.train.problem import LossSpec, OptimizerSpec, Problem, ProblemRequest
from pitstop.train.recipe import recipe_source
from pitstop.train.settings import TrainSettings
from pitstop.train.variants import TrainTarget, gate

Source = SpecSource | ModuleSource
Worker = TrainProcessWorker | InlineTrainWorker


@dataclass
class _Live(LiveVariant):
    """A training variant's run-time state: also the seeds its replicas train with."""

    seeds: list[int] = field(default_factory=list)


class TrainGroup(WorkerGroup):
    """Measures groups of training variants for one model, batch and problem. ``prepare`` looks at
    the model in a worker process (``pitstop.train.inspect``): nothing of the user's model runs in
    pitstop's own process (but a module object that cannot cross to a process, which runs inline)."""

    def __init__(self, source: Source, settings: TrainSettings, problem: ProblemRequest,
                 on_event: OnEvent | None = None) -> None:
        super().__init__(source, settings, on_event, "pitstop-train-")
        self.request = problem
        self.band: dict[str, Any] | None = None
        self.info: dict[str, Any] = {}
        self.one_thread = False  # a busy machine: every variant measured on one thread, compared by CPU time
        self.emulated: dict[str, str] = {}  # variants measured in a precision this hardware only emulates
        self._prepared = False
        self._first_step_by: float | None = None  # ``run``'s

    @property
    def prepared(self) -> bool:
        """Whether the model was inspected (the problem, target and payload are known)."""
        return self._prepared

    # -- once per run ---------------------------------------------------------------------

    def prepare(self) -> None:
        """Inspect the model in a worker: its batch, loss, optimizer, first forward and fp32
        reference step; a problem the user must fix is a usage error, a failing or non-finite
        reference a ``ReferenceFailed``; the payload every variant loads is written there."""
        s = self.settings
        self.on_event("phase", {"text": f"{self.source.name}: first forward and fp32 reference step"})
        job, inline = self._job()
        self.isolation = f"inline: {inline['reason']}" if inline else "process"
        worker: Worker = InlineTrainWorker(None) if inline else TrainProcessWorker(
            self.workdir / "inspect.log", s.threads, {"TORCHINDUCTOR_CACHE_DIR": str(self.workdir / "inductor"),
                                                      **dict(s.worker_env)})
        try:
            worker.send("inspect", job=job, workdir=str(self.workdir),
                        **{k: v for k, v in (inline or {}).items() if k != "reason"})
            reply = worker.receive(s.timeout_s)
        except WorkerFailed as exc:
            raise ModelRunError(f"model {self.source.name}: its first forward and training step could not run: "
                                f"{exc}") from None
        finally:
            worker.close()
        if "error" in reply:
            error = reply["error"]
            if error.get("field"):
                raise SettingError(error["field"], error["message"])  # the CLI names the flag
            raise (ReferenceFailed if error["kind"] == "reference" else UsageError)(error["message"])
        self._adopt(reply["ok"], inline)

    def _job(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """What the inspecting worker needs, and (for a module that cannot cross) the inline objects."""
        s, req = self.settings, self.request
        job = {"name": self.source.name, "seed": s.seed, "device": s.device, "threads": s.threads,
               "batch_size": s.batch_size, "batch_dim": s.batch_dim, "target_spec": req.target_spec,
               "loss": req.loss.to_dict() if req.loss else None,
               "optimizer": req.optimizer.to_dict() if req.optimizer else None,
               "memory_budget": s.memory_budget_bytes, "techniques": list(s.techniques)}
        if isinstance(self.source, SpecSource):
            spec = self.source.input_spec
            job["source"] = {"kind": "spec", "spec": self.source.spec.text, "input": str(spec) if spec else None}
            return job, None if s.isolate else {"reason": "isolation turned off"}
        if s.batch_dim == 0:
            module, inputs = self.source.materialize(s.batch_size or self.source.inputs.batch_size() or 1)
        else:  # the inputs as given: resizing works on dimension 0 only
            module, inputs = self.source.materialize(self.source.inputs.batch_size() or 1)
        path, reason = self.source.worker_source(module, self.workdir) if s.isolate else \
            (None, "isolation turned off")
        if reason:
            return {**job, "source": {"kind": "inline"}}, {"reason": reason, "module": module, "inputs": inputs,
                                                           "target": req.target}
        torch.save({"args": list(inputs.args), "kwargs": dict(inputs.kwargs), "target": req.target},
                   self.workdir / "inputs.pt")
        job["source"] = {"kind": "pickle", "path": (path or {})["path"], "inputs": str(self.workdir / "inputs.pt")}
        return job, None

    def _adopt(self, info: dict[str, Any], inline: dict[str, Any] | None) -> None:
        """Take what the inspection found: the settled batch size, the problem, the target, the payload."""
        self.info = {**info, "target_spec": self.request.target_spec}
        self.settings = dataclasses.replace(self.settings, batch_size=int(info["batch_size"]))
        self.problem = Problem(OptimizerSpec.from_dict(info["optimizer"]), LossSpec.from_dict(info["loss"]))
        self.target = TrainTarget.from_dict({**info["target"], "allow_emulated": self.settings.allow_emulated})
        self.seed_cosine: float | None = float(info["seed_cosine"])
        self.payload = Path(info["payload"])
        self.inputs_description = str(info["inputs"])
        self.inline = inline is not None
        self.module = inline.get("module") if inline else None
        self._prepared = True

    def recipe(self, config: TrainConfig, header: str = "") -> str:
        """The recipe source of ``config`` on this target."""
        return recipe_source(config, self.target, self.settings.threads, self.problem.optimizer,
                             self.problem.loss, header, batch_dim=self.settings.batch_dim)

    # -- a group --------------------------------------------------------------------------

    def run(self, configs: list[TrainConfig], out: list[Measurement], *, policy: TimingPolicy,
            replicas: int = 1, trajectory: bool = False, deadline: float | None = None,
            memory: bool = False, first_step_by: float | None = None) -> None:
        """Measure ``configs`` (the naive config first, in ``seeds`` replicas, when ``trajectory``),
        appending each finished row to ``out``, also on Ctrl-C (re-raised). A variant whose first
        step (a compilation) has not ended by ``first_step_by`` is stopped and skipped (``_first_step``)."""
        self._first_step_by = first_step_by
        if not self._prepared:
            self.prepare()
        self._groups += 1
        workdir = self.workdir / f"g{self._groups}"
        workdir.mkdir()
        self.on_event("group", {"batch_size": self.settings.batch_size, "variants": len(configs)})
        live = [self._spawn(c, workdir, self._seeds(c, replicas, trajectory)) for c in configs]
        interrupted = False
        try:
            self._setup(live, workdir, policy)
            for v in live:
                if deadline is not None and v.config != NAIVE and time.monotonic() >= deadline and v.alive:
                    v.skip(f"not measured: the time budget ({self.settings.time_budget_s:g} s) "
                           f"ran out first")
                    continue
                self._profile(v, memory, trajectory)
            self._rounds(live, policy, deadline)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            self._close_rows(live, out, interrupted, "step")

    def _seeds(self, config: TrainConfig, replicas: int, trajectory: bool) -> list[int]:
        if trajectory and config == NAIVE:
            return list(range(self.settings.seeds))
        return [i % self.settings.seeds for i in range(replicas)]

    def _spawn(self, config: TrainConfig, workdir: Path, seeds: list[int]) -> _Live:
        row = Measurement(config.name, config.to_dict(self.settings.threads), self.settings.batch)
        reason = self._gate(config)
        if reason:
            row.status, row.reason = "skipped", reason
            return _Live(config, row, [], seeds=[])
        from pitstop.train.variants.precision import emulated

        why = emulated(config, self.target)
        if why:  # measured because allow_emulated asked: the notes say so
            self.emulated[config.name] = why
        first = len(list(workdir.iterdir()))
        return _Live(config, row, [self._worker(config, workdir / f"{first + i}.log") for i in range(len(seeds))],
                     seeds=seeds)

    def notes_after(self, rows: list[Measurement]) -> list[str]:
        """What a stage's rows say about the measurement itself: a precision this hardware only
        emulates, measured because ``allow_emulated`` asked (script mode adds reproducibility)."""
        measured = self.emulated
        return [f"--allow-emulated: {', '.join(measured)} measured though {next(iter(measured.values()))}: its "
                "figures are this machine's; the edit is for hardware that has it"] if measured else []

    def runnable(self, config: TrainConfig) -> bool:
        """Whether a planned finalist can run at all (a script variant that cannot be edited is not planned)."""
        return True

    def _gate(self, config: TrainConfig) -> str | None:
        """Why ``config`` cannot run here (its row is ``skipped``), or None."""
        return gate(config, self.target)

    def _env(self, config: TrainConfig) -> dict[str, str]:
        """A worker's environment: inductor's cache per run, the user's --worker-env, the variant's name."""
        return {"TORCHINDUCTOR_CACHE_DIR": str(self.workdir / "inductor"), **dict(self.settings.worker_env),
                "PITSTOP_VARIANT": config.name}  # which variant a process runs (ps, /proc: for diagnosis)

    def _worker(self, config: TrainConfig, log: Path) -> Worker:
        """A worker for one replica of ``config``."""
        if self.inline:
            return InlineTrainWorker(self.module)
        return TrainProcessWorker(log, self.measured(config).threads or self.settings.threads, self._env(config))

    def measured(self, config: TrainConfig) -> TrainConfig:
        """The config as it is measured: on one thread when the machine is busy (``one_thread``).
        On two cores with both busy, a two-thread step spends most of its time waiting for the
        descheduled thread at every barrier; one thread's CPU time per step is the work itself."""
        return config.with_(threads=1) if self.one_thread else config

    def _setup_request(self, v: _Live, k: int, i: int, workdir: Path, policy: TimingPolicy) -> dict[str, Any]:
        """The ``setup`` request of replica ``i`` of the ``k``-th variant."""
        config = self.measured(v.config)
        return {"payload_path": str(self.payload), "recipe": self.recipe(config),
                "threads": config.threads or self.settings.threads, "device": self.settings.device,
                "policy": policy.to_dict(), "seed": v.seeds[i], "workdir": str(workdir / f"v{k}r{i}")}

    def _setup(self, live: list[_Live], workdir: Path, policy: TimingPolicy) -> None:
        for k, v in enumerate(live):  # all workers load in parallel
            for i, worker in enumerate(v.workers):
                try:
                    worker.send("setup", **self._setup_request(v, k, i, workdir, policy))
                except WorkerFailed as exc:
                    v.fail(str(exc))
        started = time.monotonic()
        try:
            for v in live:
                for worker in v.workers:
                    if v.alive:
                        self._receive(v, worker)
                v.row.phases_s["start"] = time.monotonic() - started  # process start, imports, model load
        except KeyboardInterrupt:
            for v in live:
                for worker in v.workers:
                    worker.kill()
            raise

    def gradient_rejection(self, v: _Live, gradients: dict[str, Any]) -> str | None:
        """Why the variant's step-1 gradients reject it, or None (against the seed-to-seed cosine)."""
        return fidelity.gradient_verdict(gradients, self.seed_cosine)

    def _profile(self, v: _Live, memory: bool, trajectory: bool) -> None:
        """First step (compile), gradients, memory and trajectory or warm-up of each replica."""
        if not v.alive:
            return
        self.on_event("phase", {"text": f"{v.row.variant}: first step, gradients, "
                                        f"{'trajectory' if trajectory else 'warm-up'}"})
        runs, peaks = [], []
        for i, worker in enumerate(v.workers):
            prepared = self._first_step(v, worker)
            if prepared is None:
                return
            if i == 0:
                v.row.compile_s = prepared["first_call_s"] if v.config.compile else None
                v.row.details = {**prepared["details"], "first_step_s": prepared["first_call_s"]}
                v.row.fidelity = {"gradients": prepared["gradients"], "seed_cosine": self.seed_cosine}
                why = self.gradient_rejection(v, prepared["gradients"])
                if why:
                    v.reject(why)
            warm = self._call(v, worker, "trajectory" if trajectory else "warmup",
                              **({"steps": self.settings.trajectory_steps} if trajectory else {}))
            if warm is None:
                return
            if memory:  # after the trajectory: it starts from the initial weights, and this step trains
                measured = self._call(v, worker, "memory")
                if measured is None:
                    return
                peaks.append(measured["peak_memory_bytes"])
            if trajectory:
                runs.append(warm)
            v.warmed({k: w for k, w in warm.items() if k not in ("losses", "times")})
        known = sorted(p for p in peaks if p is not None)
        v.row.peak_memory_bytes = known[len(known) // 2] if known else None
        if trajectory:
            self._judge(v, runs)

    def _first_step(self, v: _Live, worker: Any) -> Any:
        """The replica's first step, stopped at ``run``'s ``first_step_by`` (the probe's end: a
        compilation still running there takes the time the final needs; a BERT loop compiled for 35 s
        in a 120 s search, and its bf16 finalist, 1.65x in the probe, was never measured)."""
        by = self._first_step_by
        if by is None or v.config == NAIVE:
            return self._call(v, worker, "prepare")
        why = (f"not measured: its {'compilation' if v.config.compile else 'first step'} had not ended when the "
               f"probe's share of the time budget ({self.settings.time_budget_s:g} s) was spent; a longer "
               "--time-budget-s measures it")
        if time.monotonic() >= by:
            v.skip(why)
            return None
        prepared = v.call(worker, "prepare", max(1.0, min(self.settings.timeout_s, by - time.monotonic())))
        if prepared is None and v.row.status == "failed" and time.monotonic() >= by - 1.0:
            v.row.status, v.row.reason = "skipped", why
        return prepared

    def _judge(self, v: _Live, runs: list[dict[str, Any]]) -> None:
        """The trajectory gate; the naive config's runs are the reference band itself."""
        losses = [r["losses"] for r in runs]
        v.row.fidelity = v.row.fidelity or {}
        v.row.fidelity["trajectory"] = {"seeds": [r["seed"] for r in runs], "losses": losses}
        if v.config == NAIVE:
            self.band = fidelity.band(losses, self.settings.tolerance)
        if self.band is None:
            v.reject("no fp32 reference trajectory to compare with (the naive variant failed)")
            return
        v.row.fidelity["band"] = self.band
        why = fidelity.trajectory_verdict(losses, self.band)
        if why:
            v.reject(why)
        elif outside := fidelity.outside_band([run[self.band["steps"] - 1] for run in losses], self.band):
            v.row.fidelity["admitted_by_mean"] = outside  # runs outside the band, their mean inside

    def _took(self, v: _Live, i: int, chunk: dict[str, Any]) -> None:
        """CPU seconds per step, the turn's length, the script's end, the fp16 loss scaler's skipped steps."""
        turns = v.row.details.setdefault("turns", [[] for _ in v.row.replica_samples_s])  # samples per turn,
        turns[i].append(len(chunk["times"]))  # in order: the rounds a drift is judged on (``engine.load.drift``)
        if chunk["times"]:  # the next turn's length from this turn's steps, not from the warm-up's (which
            v.per_call_s[i] = statistics.median(chunk["times"])  # read a 1 ms step at 2 ms: turns halved to the end)
        for key, name in (("cpu_times", "cpu_samples_s"), ("optimizer_times", "optimizer_samples_s"),
                          ("data_times", "data_samples_s")):
            if chunk.get(key):  # CPU seconds per step (a busy machine's choice is made on them); seconds
                # in optimizer.step() (where an optimizer implementation acts)
                samples = v.row.details.setdefault(name, [[] for _ in v.row.replica_samples_s])
                samples[i].extend(chunk[key])
        if chunk.get("ended"):  # the script ran out of steps: timed on what it gave
            v.finished = True
            v.row.details = {**(v.row.details or {}), "timed_until_the_script_ended": chunk["steps"]}
        scaler = {"skipped": chunk["skipped"], "steps": chunk["steps"]}
        if v.row.fidelity is not None and v.config.precision == "fp16-autocast":
            v.row.fidelity["scaler"] = scaler
        why = fidelity.scaler_verdict(chunk["skipped"], chunk["steps"])
        if why:
            v.reject(why)
