"""The skeleton both groups share (bench's variants of a model, train's training steps): each
variant's run-time state (its replica workers, calls per second, seconds spent), the interleaved
rounds that time them until precise enough, out of budget, or past a deadline, and
``WorkerGroup``, the base of ``bench.group.GroupRunner`` and ``train.group.TrainGroup`` (the run's
temporary folder, the rounds, one replica's turn, requests under the settings' timeout)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop.engine.launch import WorkerFailed
from pitstop.engine.measurement import Measurement
from pitstop.engine.timer import TimingPolicy, chunk_size, precise_enough

__all__ = ["LiveVariant", "WorkerGroup", "interleave", "switched_in", "turn_calls"]
OnEvent = Callable[[str, dict[str, Any]], None]


@dataclass
class LiveVariant:
    """A variant's run-time state within one group: its replica workers (anything with ``kill``)."""

    config: Any
    row: Measurement
    workers: list[Any]
    per_call_s: list[float] = field(default_factory=list)
    spent_s: float = 0.0
    finished: bool = False  # no more calls to give (a script that ended): timed on what it has

    @property
    def alive(self) -> bool:
        return self.row.status not in ("failed", "skipped")

    def skip(self, reason: str) -> None:
        """Not measured (its workers are closed; the row says why)."""
        self.row.status, self.row.reason = "skipped", reason
        for worker in self.workers:
            worker.close()

    def reject(self, reason: str) -> None:
        """Measured, but not admitted (the row says why); the first reason stays."""
        if self.row.status == "ok":
            self.row.status, self.row.reason = "rejected", reason

    def fail(self, reason: str) -> None:
        """Mark the variant failed (one replica's failure fails the variant) and stop its workers."""
        if self.alive:
            self.row.status, self.row.reason = "failed", reason
        for worker in self.workers:
            worker.kill()

    def warmed(self, warmup: dict[str, Any]) -> None:
        """A replica warmed up: the first replica's record kept, its per-call estimate (which sizes
        its turns) noted, and its group of samples opened."""
        self.row.warmup = self.row.warmup or warmup
        self.per_call_s.append(warmup["per_call_s"])
        self.row.replica_samples_s.append([])

    def call(self, worker: Any, method: str, timeout_s: float, **kwargs: Any) -> Any:
        """Ask one of its workers to run ``method`` and wait for the answer (None once failed)."""
        if not self.alive:
            return None
        try:
            worker.send(method, **kwargs)
        except WorkerFailed as exc:  # it died between requests (the out-of-memory killer, a kill -9)
            self.fail(str(exc))
            return None
        return self.receive(worker, timeout_s)

    def receive(self, worker: Any, timeout_s: float) -> Any:
        """A worker's next answer; a worker that fails (raised, exited, hung) fails the variant."""
        if not self.alive:
            return None
        try:
            return worker.receive(timeout_s)
        except WorkerFailed as exc:
            self.fail(str(exc))
            return None


def interleave(live: list[Any], policy: TimingPolicy, deadline: float | None,
               turn: Callable[[Any, int], None], on_round: Callable[[int], None]) -> None:
    """Interleaved rounds of ``turn(variant, replica)`` until precise enough or out of budget, and
    never fewer than ``policy.min_rounds`` (as every variant gets ``min_samples`` calls whatever the
    budget says: a turn a round, at least one call, once the budget is spent).
    Past ``deadline`` rounds stop too, but only once every variant has ``min_samples`` calls: an
    interval needs samples. The order rotates each round, so nothing always runs first."""
    round_no = 0
    while True:
        alive = [v for v in live if v.alive and v.per_call_s]
        active = [v for v in alive if not v.finished
                  and (v.spent_s < policy.budget_s or len(v.row.samples_s) < policy.min_samples
                       or round_no < policy.min_rounds)]
        if not active or (round_no >= policy.min_rounds and all(
                precise_enough(v.row.replica_samples_s, policy) for v in alive if not v.finished)):
            return
        if deadline is not None and time.monotonic() >= deadline \
                and all(len(v.row.samples_s) >= policy.min_samples for v in active):
            return
        turns = [(v, i) for i in range(max(len(v.per_call_s) for v in active)) for v in active
                 if i < len(v.per_call_s)]
        shift = round_no % len(turns)
        for v, i in turns[shift:] + turns[:shift]:
            if v.alive:
                turn(v, i)
        round_no += 1
        on_round(round_no)


def turn_calls(v: LiveVariant, i: int, policy: TimingPolicy) -> int:
    """Timed calls for replica ``i``'s share of a round: about ``round_s / replicas``, never
    past what is left of the variant's budget (at least one)."""
    per_call, replicas = v.per_call_s[i], len(v.per_call_s)
    left = (policy.budget_s - v.spent_s) / replicas
    return min(chunk_size(per_call, policy, replicas), max(1, int(left / max(per_call, 1e-9))))


SAMPLED = ("times", "cpu_times", "optimizer_times", "data_times")  # a chunk's per-call lists, in the order of its calls


def switched_in(chunk: dict[str, Any], calls: int) -> dict[str, Any]:
    """The chunk without its first ``calls`` calls when it has more than that: the process had just
    been switched in after another variant's turn, and its first call paid for it (on 2 cores, a
    training step of 22 ms took 31 ms when every turn was one step). A turn of one call keeps it."""
    if calls <= 0 or len(chunk["times"]) <= calls:
        return chunk
    return {**chunk, **{key: chunk[key][calls:] for key in SAMPLED if isinstance(chunk.get(key), list)
                        and len(chunk[key]) == len(chunk["times"])}}


class WorkerGroup:
    """A group of variants timed in worker processes, for one source under one set of settings
    (anything with ``timeout_s``). A subclass starts the variants (its own ``_spawn``) and says
    what else a timed chunk carries (``_took``)."""

    def __init__(self, source: Any, settings: Any, on_event: OnEvent | None, prefix: str) -> None:
        self.source, self.settings = source, settings
        self.on_event: OnEvent = on_event or (lambda kind, info: None)
        self.isolation = "process"
        self._groups = 0
        self._tmp = tempfile.TemporaryDirectory(prefix=prefix)

    def close(self) -> None:
        """Remove the run's temporary files (payloads, worker logs, exported graphs)."""
        self._tmp.cleanup()

    @property
    def workdir(self) -> Path:
        """The run's temporary directory (artifacts such as exported ONNX graphs live under it)."""
        return Path(self._tmp.name)

    def _rounds(self, live: list[Any], policy: TimingPolicy, deadline: float | None) -> None:
        interleave(live, policy, deadline, lambda v, i: self._turn(v, i, policy),
                   lambda n: self.on_event("round", {"round": n, "live": live, "policy": policy}))

    def _turn(self, v: Any, i: int, policy: TimingPolicy) -> None:
        """One replica's share of a round (``turn_calls``)."""
        start = time.monotonic()
        chunk = self._call(v, v.workers[i], "run", n=turn_calls(v, i, policy))
        v.row.phases_s["timing"] = v.row.phases_s.get("timing", 0.0) + time.monotonic() - start
        if chunk:
            v.spent_s += sum(chunk["times"])
            chunk = switched_in(chunk, policy.switch_in)
            v.row.replica_samples_s[i].extend(chunk["times"])
            self._took(v, i, chunk)

    def _took(self, v: Any, i: int, chunk: dict[str, Any]) -> None:
        """What else replica ``i``'s timed chunk says (page faults, CPU times, the script's end)."""

    def _close_rows(self, live: list[Any], out: list[Any], interrupted: bool, unit: str) -> None:
        """The group's end: workers closed (killed on Ctrl-C), a variant interrupted before any timed
        ``unit`` failed with that reason, every row appended to ``out`` and announced."""
        for v in live:
            for worker in v.workers:
                worker.kill() if interrupted else worker.close()
            if interrupted and v.alive and not v.row.samples_s:
                v.row.status, v.row.reason = "failed", f"interrupted before any timed {unit}"
            out.append(v.row)
            self.on_event("row", {"row": v.row})

    def _call(self, v: Any, worker: Any, method: str, **kwargs: Any) -> Any:
        return v.call(worker, method, self.settings.timeout_s, **kwargs)

    def _receive(self, v: Any, worker: Any) -> Any:
        return v.receive(worker, self.settings.timeout_s)
