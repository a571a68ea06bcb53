"""``Profiler``: the profile's consumers on a session, composed; ``pitstop.profile()`` makes one.

Consumers, subscribed in this order (the order matters: the drill-down's ``prof.step()`` runs
before the phase timer closes the step, so its cost lands in a step left out of the statistics):
``DrillDown`` (torch.profiler on the window), ``PhaseTimer`` (the phases), ``SyncWatch`` (syncs
and h2d copies), ``Observations`` and ``FirstSteps`` (what the verdict tests). With a session
given (``pitstop.profile(session=doctor.session)``) profile and doctor share one set of hooks."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pitstop.hooks.session import Consumer, Session
from pitstop.hooks.sites import crash_site, format_exception_line
from pitstop.profile.comm import CommWatch
from pitstop.profile.drill import DrillDown
from pitstop.profile.observe import FirstSteps, Observations
from pitstop.profile.phases import PhaseTimer
from pitstop.profile.ranks import analyze
from pitstop.profile.result import ProfileReport, summarize_steps, timeline
from pitstop.profile.settings import ProfileSettings
from pitstop.profile.syncs import SyncWatch
from pitstop.profile.verdict import Facts, verdict
from pitstop.ranks import world


class Profiler:
    """Where a training step's time goes: ``with pitstop.profile() as prof: train()``, then
    ``print(prof.report)``. ``model``/``optimizer`` are optional (found as they run); ``session``:
    an attached or unattached doctor session to share; options as for ``ProfileSettings``."""

    def __init__(self, model: nn.Module | None = None, optimizer: torch.optim.Optimizer | None = None, *,
                 session: Session | None = None, settings: ProfileSettings | None = None, **options: Any) -> None:
        from pitstop._settings import with_options

        self.settings = with_options(ProfileSettings, settings, options, "profile")
        self.session = session if session is not None else Session(model, optimizer)
        self._own = session is None
        if session is not None and model is not None:
            session.add_root(model, "model")
        if session is not None and optimizer is not None:
            session.add_optimizer(optimizer)
        self.timer = PhaseTimer(self._excluded)
        self.drill = DrillDown(self.settings, self.timer, self.session) if self.settings.drill_down else None
        self.syncs = SyncWatch(self.timer, self._excluded)
        self.observed = Observations(self.session, self._in_window)
        self.comm = CommWatch(self._excluded)
        self.consumers: list[Consumer] = [c for c in (self.drill, self.timer, self.syncs, self.observed, self.comm)
                                          if c]
        self.consumers.append(FirstSteps(self.session, self.observed))
        self.crash: dict[str, str] | None = None
        self.script: str | None = None
        self.command: list[str] | None = None  # the script and its arguments (pitstop profile SCRIPT ARGS)
        self._gathered: list[dict[str, Any] | None] | None = None  # rank 0 under torchrun: every rank's summary
        self._gathered_elsewhere = False  # another rank gathered (this one sent its summary)
        self._restore_destroy: Any = None
        self.attached = False
        self._report: ProfileReport | None = None

    def _in_window(self, step: int) -> bool:
        first, last = self.settings.window
        return self.drill is not None and first - 1 <= step <= last

    def _excluded(self, step: int) -> bool:
        """Left out of the statistics: the first step (warm-up) and the drill-down's steps (slower)."""
        return step == 1 or self._in_window(step)

    def attach(self) -> Profiler:
        """Subscribe, wrap the syncing methods and start the clock (idempotent)."""
        if self.attached:
            return self
        for consumer in self.consumers:
            self.session.subscribe(consumer)
        if self.settings.syncs:
            self.syncs.install(copies=torch.cuda.is_available())
            self.timer.copies_watched = torch.cuda.is_available()
            self.timer.seen.add("sync")  # watched: no sync seen is a measured 0
        self.session.attach()
        self.timer.start()
        if self.drill is not None:
            self.drill.start()
        if world() > 1 and self._restore_destroy is None:  # the job's end: gather while the group exists
            from pitstop.ranks import before_destroy

            self._restore_destroy = before_destroy(self._gather)
        self.attached, self._report = True, None
        return self

    def _gather(self) -> None:
        """Every rank's summary on rank 0 (``pitstop.ranks.gather``), once."""
        if self._gathered is not None or self._gathered_elsewhere:
            return
        from pitstop.profile.ranks import summary
        from pitstop.ranks import gather

        local = self._make_report(distributed=False).to_dict()
        docs = gather(summary(local, self.comm.median_ms(), self.comm.ddp, self.comm.comm()), "profile")
        if docs is None:
            self._gathered_elsewhere = True  # not rank 0: rank 0 reports for the job
        else:
            self._gathered = docs

    def detach(self) -> None:
        """Stop: the session too when it is the profiler's own; else only the profiler's consumers."""
        if not self.attached:
            return
        self.attached = False
        if self._own and self.session.attached:
            self.session.detach()  # on_finish reaches every consumer
        else:
            for consumer in self.consumers:
                if self.session.attached:
                    consumer.on_finish()
                self.session.unsubscribe(consumer)
        self.syncs.uninstall()
        if self._restore_destroy is not None:
            self._restore_destroy()
            self._restore_destroy = None

    def __enter__(self) -> Profiler:
        return self.attach()

    def __exit__(self, *exc: Any) -> None:
        if exc[1] is not None:
            self.explain(exc[1])
        self.detach()

    def explain(self, exc: BaseException) -> None:
        """Record that the run crashed with ``exc`` (the report is still made)."""
        self.crash = {"error": format_exception_line(exc), "where": crash_site(exc)}

    @property
    def report(self) -> ProfileReport:
        """The report (made once detached; while attached, a snapshot of the steps so far)."""
        if self._report is not None:
            return self._report
        report = self._make_report(calibrate=not self.attached)  # a snapshot measures nothing in the run
        if not self.attached:
            self._report = report
        return report

    def train_command(self) -> str:
        """The command that measures the fixes inside the profiled script (its own arguments kept)."""
        import shlex

        if not self.command:
            return "pitstop train YOUR_TRAINING_SCRIPT.py"
        from pitstop.engine.scripts import TRAIN_SCRIPT_OPTIONS as ours

        script, *args = self.command
        if any(a.split("=", 1)[0] in ours for a in args):  # the script's own --steps: after `--`, not pitstop's
            return "pitstop train " + shlex.join([script, "--", *args])
        return "pitstop train " + shlex.join(self.command)

    def _make_report(self, distributed: bool = True, calibrate: bool = True) -> ProfileReport:
        from pitstop._env import native_bf16, physical_cores

        summary = summarize_steps(self.timer.steps, self.timer.seen, self.timer.tail_eval_s, calibrate)
        step_ms, phases = summary.step_ms, summary.phases
        shares = {p["name"]: p["share"] for p in phases}
        syncs = self.syncs.rows()
        native = self.settings.native_bf16
        if native is None:
            native = native_bf16(self.observed.device)
        facts = Facts(shares, syncs, self.observed, native, self.settings.physical_cores or physical_cores(),
                      bool(torch.backends.cudnn.benchmark), step_ms["median"] or 0.0, self.train_command(),
                      summary.page_faults)
        drill = self.drill
        exit_: dict[str, Any] = {"status": "ok"}
        if self.crash:
            exit_ = {"status": "crashed", **self.crash}
        found = verdict(facts) if step_ms["median"] else []
        job = None
        if distributed and world() > 1 and not self.attached:
            self._gather()
            if self._gathered is not None:
                job, per_rank = analyze(self._gathered, self.train_command())
                found = sorted([*found, *per_rank], key=lambda v: -v["saves"])
        return ProfileReport(
            step_ms, phases, syncs, drill.top_ops if drill else {}, found,
            self.session.counter.completed(), timeline(self.timer.steps),
            {"steps": list(drill.recorded) if drill and drill.recorded else None,
             "left_out": [self.settings.wait, self.settings.window[1]] if drill else None,
             "trace": drill.trace_path if drill else None, "error": drill.error if drill else None},
            "CUDA events" if self.timer.clock.device == "cuda" else "wall clock", self.script, exit_,
            list(self.session.internal), evaluation=summary.evaluation, stalls=summary.stalls, distributed=job,
            comm_wait_ms=self.comm.median_ms(), comm=self.comm.comm(), page_faults=summary.page_faults)


def profile(model: nn.Module | None = None, optimizer: torch.optim.Optimizer | None = None,
            **options: Any) -> Profiler:
    """A ``Profiler`` to use as a context manager: ``with pitstop.profile() as prof: train()``, then
    ``print(prof.report)``. Options as for ``ProfileSettings`` (``wait``, ``active``, ``trace``, ...)
    and ``session=`` to share a doctor's session."""
    return Profiler(model, optimizer, **options)
