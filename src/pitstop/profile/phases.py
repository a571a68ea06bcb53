"""Where each optimizer step's time goes: an exclusive phase timeline per step.

The session's events open and close phases (data wait, forward, backward, optimizer; the sync and
host-to-device wrappers add ``sync`` and ``h2d``); a phase opened inside another (a ``.item()`` in
the forward, a closure's forward inside ``optimizer.step``) takes the time from it, and time in no
phase is ``other``. Every switch is one clock mark, so a step's phases add up to its wall time
exactly (the time between the two marks that end it and the step before). A step ends when the
session's ``on_iteration`` says so (gradient accumulation and closures as the doctor counts them).

An evaluation is not a training step: from a forward of a model that trains, run without autograd
(``no_grad``, ``inference_mode``: a validation loop, Lightning's or HF's eval loop), until training
resumes (a forward with autograd, a ``backward()``, an optimizer step, the step's end), all time is
``eval`` (its data, its forwards, its metrics), kept out of the step's phases and reported apart;
so is the time before its first forward since the step's last training work (its first batch's
fetch, its set-up).
A model run without autograd that never trains here (a teacher, a frozen encoder) stays ``forward``:
it is part of the step.

Each step also records the process's minor page faults during it (``faults``: see ``faults.py``).

Inside torch.profiler's window (``marking``) each phase is also a ``pitstop:<phase>`` range in the
trace, so the drill-down can put every op under the phase that ran it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import torch

from pitstop.hooks.session import Consumer
from pitstop.profile.clock import CudaClock, WallClock, clock_for
from pitstop.profile.faults import minor_faults

PHASES = ("data", "h2d", "forward", "backward", "optimizer", "sync", "other")  # a training step's
EVAL = "eval"  # an evaluation between steps: never in the step's phases
MAX_STEPS = 5000  # steps kept in detail (a long run's later steps add nothing to the picture)


@dataclass
class StepTimes:
    """One optimizer step: its wall time and each phase's share of it, in seconds; ``eval_s``: an
    evaluation that ran before it (in ``wall_s``, never in ``phases``). ``measured``: the step counts
    in the statistics (the first step warms up; the drill-down's steps are slower). ``faults``: the
    process's minor page faults during the step (None: not counted here)."""

    step: int
    wall_s: float
    phases: dict[str, float]
    measured: bool = True
    eval_s: float = 0.0
    faults: int | None = None


class PhaseTimer(Consumer):
    """The phase timeline of every step (``steps``) and which phases were measured at all (``seen``)."""

    def __init__(self, excluded: Any = lambda step: step == 1) -> None:
        self.excluded = excluded  # step -> bool: kept out of the statistics
        self.clock: WallClock | CudaClock = WallClock()
        self.steps: list[StepTimes] = []
        self.tail_eval_s = 0.0  # an evaluation after the last step
        self.seen: set[str] = {"other"}
        self.marking = False
        self.copies_watched = False  # h2d copies are wrapped: on a GPU run, none seen is a measured 0
        self._stack: list[tuple[str, Any]] = []
        self._marks: list[tuple[str, Any]] = []
        self._pending: deque[tuple[int, list[tuple[str, Any]], Any, bool, WallClock | CudaClock, int | None]] = deque()
        self._faults: int | None = None  # the process's minor page faults at the current step's start
        self._clock_chosen = False
        self._discard = False
        self.trained: set[int] = set()  # roots seen in a forward with autograd
        self.evaluating = False
        self._forwards: list[bool] = []  # per open root forward: did it enter the forward phase

    # -- the timeline ------------------------------------------------------------------------

    def start(self) -> None:
        """The first step starts now."""
        self._marks = [("other", self.clock.mark())]
        self._faults = minor_faults()

    def enter(self, phase: str) -> None:
        """``phase`` starts (inside the phase running now)."""
        if not self._marks:
            self.start()
        rf = None
        if self.marking:
            rf = torch.autograd.profiler.record_function(f"pitstop:{phase}")
            rf.__enter__()
        self._stack.append((phase, rf))
        self.seen.add(phase)
        self._switch(phase)

    def leave(self, phase: str) -> None:
        """``phase`` ends (and any phase left open inside it)."""
        stack = self._stack
        if stack and stack[-1][0] == phase and stack[-1][1] is None:  # the common case, kept cheap
            stack.pop()
            self._switch(stack[-1][0] if stack else "other")
            return
        if not any(p == phase for p, _ in stack):
            return
        while self._stack:
            name, rf = self._stack.pop()
            if rf is not None:
                rf.__exit__(None, None, None)
            if name == phase:
                break
        self._switch(self._stack[-1][0] if self._stack else "other")

    def _switch(self, phase: str) -> None:
        if self.evaluating:
            phase = EVAL  # everything of an evaluation is eval, whatever it calls
        if self._marks and self._marks[-1][0] != phase:
            self._marks.append((phase, self.clock.mark()))

    # -- session events ------------------------------------------------------------------------

    def on_data_start(self) -> None:
        self.enter("data")

    def on_data(self, wait_s: float) -> None:
        self.leave("data")

    def on_root_forward_start(self, module: torch.nn.Module) -> None:
        if not self._clock_chosen:
            self._choose_clock(module)
        training = torch.is_grad_enabled()
        if training:
            self.trained.add(id(module))
            self._end_eval()
        elif id(module) in self.trained and not self.evaluating:
            self.evaluating = True
            self._claim_gap()
            self.enter(EVAL)
        self._forwards.append(not self.evaluating)
        if not self.evaluating:
            self.enter("forward")

    def on_root_forward(self, module: torch.nn.Module, output: Any, grad_enabled: bool) -> None:
        if self._forwards.pop() if self._forwards else True:
            self.leave("forward")

    def _claim_gap(self) -> None:
        """An evaluation starts: the time since the step's last training work (its end, or the last
        forward, backward or optimizer phase) spent waiting for data or in no phase is the
        evaluation's too (fetching its first batch, building its metrics), not the next step's."""
        if self._stack:  # inside a phase (a forward without autograd within the step): nothing to claim
            return
        i = len(self._marks)
        while i > 0 and self._marks[i - 1][0] in ("data", "other", EVAL):
            i -= 1
        self._marks[i:] = [(EVAL, mark) for _, mark in self._marks[i:]]

    def _end_eval(self) -> None:
        """Training resumes: the evaluation's phase ends."""
        if self.evaluating:
            self.evaluating = False
            self.leave(EVAL)

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        self._end_eval()
        self.enter("backward")

    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None:
        self.leave("backward")

    def on_step_start(self, optimizer: torch.optim.Optimizer) -> None:
        self._end_eval()
        self.enter("optimizer")

    def on_step_done(self, optimizer: torch.optim.Optimizer) -> None:
        self.leave("optimizer")

    def on_iteration(self, step: int) -> None:
        self._end_eval()
        while self._stack:  # a phase left open (a backward that raised) ends with its step
            self.leave(self._stack[0][0])
        end = self.clock.mark()
        faults, before = minor_faults(), self._faults
        if len(self.steps) + len(self._pending) < MAX_STEPS:
            during = faults - before if faults is not None and before is not None else None
            self._pending.append((step, self._marks, end, self._discard, self.clock, during))
        self._marks, self._discard, self._faults = [("other", end)], False, faults
        self._resolve(block=False)

    def on_finish(self) -> None:
        """The run ends: an evaluation after the last step (a final validation) is kept in ``tail_eval_s``."""
        self._resolve(block=True)
        if not any(phase == EVAL for phase, _ in self._marks):
            return
        self._end_eval()
        end = self.clock.mark()
        self.clock.wait(end)
        self.tail_eval_s = sum(self.clock.seconds(a, b) for (phase, a), (_, b)
                               in zip(self._marks, [*self._marks[1:], ("", end)], strict=True) if phase == EVAL)

    # -- reading the marks -------------------------------------------------------------------------

    def _choose_clock(self, module: torch.nn.Module) -> None:
        self._clock_chosen = True
        clock = clock_for(module)
        if clock.device == "cuda" and self.copies_watched:
            self.seen.add("h2d")
        if type(clock) is not type(self.clock):  # this step's earlier marks are on the other clock
            self.clock, self._discard = clock, True
            self._marks = [(self._marks[-1][0] if self._marks else "other", clock.mark())]

    def _resolve(self, block: bool) -> None:
        """Turn the marks of finished steps into times (on CUDA: once their events completed)."""
        while self._pending:
            step, marks, end, discard, clock, faults = self._pending[0]
            if not clock.ready(end):
                if not block:
                    return
                clock.wait(end)
            self._pending.popleft()
            times = dict.fromkeys((*PHASES, EVAL), 0.0)
            for (phase, a), (_, b) in zip(marks, [*marks[1:], ("", end)], strict=True):
                times[phase] += clock.seconds(a, b)
            wall = clock.seconds(marks[0][1], end)
            eval_s = times.pop(EVAL)
            self.steps.append(StepTimes(step, wall, times, not (discard or self.excluded(step)), eval_s, faults))
