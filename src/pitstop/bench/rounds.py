"""The timing loop both groups share (bench's variants of a model, train's training steps): each
variant's run-time state (its replica workers, calls per second, seconds spent) and the
interleaved rounds that time them until precise enough, out of budget, or past a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pitstop.bench.launch import WorkerFailed
from pitstop.bench.result import Measurement
from pitstop.bench.timer import TimingPolicy, chunk_size, precise_enough

__all__ = ["LiveVariant", "interleave", "turn_calls"]


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

    def fail(self, reason: str) -> None:
        """Mark the variant failed (one replica's failure fails the variant) and stop its workers."""
        if self.alive:
            self.row.status, self.row.reason = "failed", reason
        for worker in self.workers:
            worker.kill()

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
    """Interleaved rounds of ``turn(variant, replica)`` until precise enough or out of budget.
    Past ``deadline`` rounds stop too, but only once every variant has ``min_samples`` calls: an
    interval needs samples. The order rotates each round, so nothing always runs first."""
    round_no = 0
    while True:
        alive = [v for v in live if v.alive and v.per_call_s]
        active = [v for v in alive if not v.finished
                  and (v.spent_s < policy.budget_s or len(v.row.samples_s) < policy.min_samples)]
        if not active or all(precise_enough(v.row.replica_samples_s, policy) for v in alive if not v.finished):
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
