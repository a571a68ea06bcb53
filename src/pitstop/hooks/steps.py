"""The step counter: which training step is in progress, from the optimizers' own step calls.

One optimizer: the step in progress is its completed steps + 1. Several (a GAN): one iteration
is a step of each optimizer active lately; mid-iteration the busiest optimizer's count is the
step. A step given a closure (LBFGS, Lightning) runs its forward and backward inside ``step()``."""

from __future__ import annotations

from typing import Any

import torch

CURRENT = [1]  # the attached session's step, read by graph sentinels (one session at a time)


class StepCounter:
    """Per-optimizer step counts and the iteration they add up to (1-based ``step``)."""

    def __init__(self) -> None:
        self.step = 1  # the step in progress
        self.counts: dict[int, int] = {}  # optimizer id -> steps completed
        self.closure = False  # the step in progress runs a closure
        self.manual_steps = 0  # parameter updates by hand after a backward (no optimizer)
        self._events = 0
        self._last_event: dict[int, int] = {}

    def knows(self, optimizer: torch.optim.Optimizer) -> bool:
        """Whether ``optimizer`` has been seen."""
        return id(optimizer) in self.counts

    def add(self, optimizer: torch.optim.Optimizer) -> None:
        """Start counting ``optimizer`` (idempotent)."""
        self.counts.setdefault(id(optimizer), 0)

    def begin(self, optimizer: torch.optim.Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """An optimizer step starts: the step becomes this optimizer's; True when it runs a closure."""
        self.add(optimizer)
        self.set(self.counts[id(optimizer)] + 1)
        rest = [a for a in args if a is not optimizer]  # the hook's args start with the optimizer itself
        self.closure = callable(kwargs.get("closure", rest[0] if rest else None))
        return self.closure

    def complete(self, optimizer: torch.optim.Optimizer) -> None:
        """The optimizer's step is done (counted; the step in progress moves on in ``advance``)."""
        self.counts[id(optimizer)] += 1
        self._events += 1
        self._last_event[id(optimizer)] = self._events

    def advance(self) -> int | None:
        """Move to the step now in progress; the step just completed when an iteration ended."""
        done = self.step
        self.set(self._current())
        return done if self.step > done else None

    def manual(self) -> int:
        """A step made by hand (no optimizer) completed: its number."""
        self.manual_steps += 1
        done = self.step
        self.set(done + 1)
        return done

    def completed(self) -> int:
        """Steps completed by the busiest optimizer (or by hand, without one)."""
        return max(self.counts.values(), default=0) or self.manual_steps

    def total(self) -> int:
        """Optimizer steps completed, all optimizers together."""
        return sum(self.counts.values())

    def set(self, step: int) -> None:
        self.step = step
        CURRENT[0] = step

    def _current(self) -> int:
        recent = 4 * max(1, len(self.counts))
        counts = [n for key, n in self.counts.items() if self._events - self._last_event.get(key, 0) < recent]
        hi = max(counts, default=0)
        return hi + 1 if min(counts, default=0) == hi else hi
