"""``Doctor``: the session, the step counter, the timeline, the findings and the checks, composed.

The ``Session`` (session.py) installs PyTorch's hooks and turns them into events; its
``StepCounter`` (steps.py) knows the step; ``Readings`` (timeline.py) reads losses and gradient
norms from the device every ``sync_every`` steps, keeps the ``Timeline`` and publishes them to
the checks; each ``Check`` (checks/, one per code) records into ``Findings`` (findings.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from pitstop.doctor.check import Check
from pitstop.doctor.checks import InputStall, default_checks
from pitstop.doctor.crash import explain
from pitstop.doctor.findings import Findings
from pitstop.doctor.result import DoctorReport, merge_ranks, ordered, timeline_summary
from pitstop.doctor.timeline import Readings, Timeline
from pitstop.hooks.session import Session


class Doctor:
    """Watches a training run: ``Doctor(model, optimizer).attach()`` or ``with pitstop.doctor():``.

    ``model``/``optimizer`` are optional: roots and optimizers are found as they run. ``guard``
    skips optimizer steps whose gradients are non-finite (reading them every step; a step given a
    closure, as LBFGS and Lightning do, computes its gradients inside ``step()`` and cannot be
    skipped, only reported).
    ``sync_every``: steps between reads of device-side values (default 1 on CPU, 50 with CUDA)."""

    def __init__(self, model: nn.Module | None = None, optimizer: torch.optim.Optimizer | None = None, *,
                 guard: bool = False, sync_every: int | None = None, checks: Iterable[Check] | None = None,
                 select: Iterable[str] = (), ignore: Iterable[str] = (), rank: int | None = None) -> None:
        self.guard = guard
        self.session = Session(model, optimizer)
        self.findings = Findings(select, ignore, step=lambda: self.session.step)
        self.timeline = Timeline()
        self.readings = Readings(self.session, self.timeline, guard=guard, sync_every=sync_every)
        chosen = list(checks) if checks is not None else default_checks()
        self.checks = [c for c in chosen if any(self.findings.wanted(code) for code in c.codes or (c.code,))]
        self.rank = rank if rank is not None else int(os.environ.get("RANK", "0"))
        self.crash: dict[str, str] | None = None
        self._merged: DoctorReport | None = None  # merged over the process group before it was destroyed
        self._orig_destroy: Any = None
        for check in self.checks:  # checks first: they see a step's gradients before guard drops them
            check.bind(self.session, self.findings, self)
            self.session.subscribe(check)
        self.session.subscribe(self.readings)

    @property
    def step(self) -> int:
        """The step in progress (1-based)."""
        return self.session.step

    @property
    def sync_every(self) -> int:
        return self.readings.sync_every

    @property
    def skipped_steps(self) -> list[int]:
        """Steps ``guard`` skipped."""
        return self.readings.skipped_steps

    @property
    def internal(self) -> list[str]:
        """Internal warnings (a check raised and was turned off; training went on)."""
        return self.session.internal

    def attach(self) -> Doctor:
        """Install every hook (idempotent); under a multi-process job, also a wrapper of
        ``destroy_process_group`` that merges the ranks' findings over the group first."""
        self.session.attach()
        if int(os.environ.get("WORLD_SIZE", "1")) > 1 and self._orig_destroy is None:
            self._wrap_destroy()
        return self

    def detach(self) -> None:
        """Read what is still on the device, then remove every hook and restore what was wrapped."""
        if self.session.attached:
            self.readings.flush()
            self.session.detach()
        if self._orig_destroy is not None:
            import torch.distributed as dist
            from torch.distributed import distributed_c10d

            dist.destroy_process_group = distributed_c10d.destroy_process_group = self._orig_destroy
            self._orig_destroy = None

    def _wrap_destroy(self) -> None:
        """The job's end: stop watching and merge over the process group while it still exists."""
        import torch.distributed as dist
        from torch.distributed import distributed_c10d

        if not dist.is_available():
            return
        orig = self._orig_destroy = distributed_c10d.destroy_process_group

        def destroy_process_group(group: Any = None) -> None:
            if group is None and dist.is_initialized() and self._merged is None:
                self.detach()
                self._merged = self.report()
            orig(group)

        dist.destroy_process_group = distributed_c10d.destroy_process_group = destroy_process_group

    def __enter__(self) -> Doctor:
        return self.attach()

    def __exit__(self, *exc: Any) -> None:
        if exc[1] is not None:
            self.explain(exc[1])
        self.detach()

    def explain(self, exc: BaseException) -> None:
        """Record that the run crashed with ``exc`` (a known autograd error becomes a finding)."""
        self.crash = explain(self.findings, exc)

    @property
    def data_share(self) -> float | None:
        """The measured share of step time spent waiting for data (None when not measured)."""
        return next((c.share() for c in self.checks if isinstance(c, InputStall)), None)

    def found(self, code: str, where: str, message: str, *, step: int | None = None, fix: str | None = None) -> None:
        """Record a finding (for checks written against ``self.doctor``; new ones call ``self.found``)."""
        self.findings.found(code, where, message, step=step, fix=fix)

    def name_of(self, obj: Any) -> str:
        """Qualified name of a parameter or module (``model.encoder.norm``), else its type."""
        return self.session.name_of(obj)

    def watched(self) -> dict[str, Any]:
        """What was watched: optimizers and their steps, steps made by hand, processes not watched."""
        counter = self.session.counter
        return {"optimizers": len(counter.counts), "optimizer_steps": counter.total(),
                "manual_steps": counter.manual_steps, "not_watched": self.session.workers.not_watched()}

    def report(self) -> DoctorReport:
        """The findings so far (merged across ranks under torch.distributed) as a ``DoctorReport``."""
        if self._merged is not None:
            return self._merged
        return merge_ranks(self.local_report(), self.rank)

    def local_report(self) -> DoctorReport:
        """This process's findings so far, not merged across ranks (no collective call: safe
        for a snapshot in the middle of a run)."""
        exit_: dict[str, Any] = {"status": "ok"}
        if self.crash:
            exit_ = {"status": "crashed", "error": self.crash["error"], "where": self.crash.get("where", "")}
        report = DoctorReport(ordered(self.findings.values()), self.session.counter.completed(), exit_,
                              list(self.skipped_steps), self.data_share, list(self.internal),
                              timeline=timeline_summary(self.timeline.as_dict()), watched=self.watched())
        return report
