"""The op-level drill-down: torch.profiler over a few scheduled steps only, ops put under phases.

torch.profiler's own schedule runs it: off for ``wait`` steps, then ``warmup`` steps tracing and
discarding, then ``active`` steps recorded, then off for good (``repeat=1``). While it records,
the phase timer opens a ``pitstop:<phase>`` range per phase; each op's self time goes to the
innermost range it started in (any thread: backward ops run on autograd's threads), so the top
ops are per phase. The Chrome trace is written only when asked for (``trace``)."""

from __future__ import annotations

import os
from typing import Any

import torch

from pitstop.hooks.session import Consumer, Session
from pitstop.profile.phases import PhaseTimer
from pitstop.profile.settings import ProfileSettings

TOP = 5  # ops listed per phase


class DrillDown(Consumer):
    """Runs torch.profiler on the window; ``top_ops`` (phase -> rows) and ``trace_path`` once recorded."""

    def __init__(self, settings: ProfileSettings, timer: PhaseTimer, session: Session | None = None) -> None:
        self.session = session  # unsubscribed from once done
        self.settings = settings
        self.timer = timer
        self.top_ops: dict[str, list[dict[str, Any]]] = {}
        self.recorded: tuple[int, int] | None = None  # the first and last step recorded
        self.trace_path: str | None = None
        self.error: str | None = None
        self._prof: Any = None
        self._step = 0

    def start(self) -> None:
        from torch.profiler import ProfilerActivity, profile, schedule

        s = self.settings
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        self._prof = profile(activities=activities, on_trace_ready=self._ready,
                             schedule=schedule(skip_first=s.wait, wait=0, warmup=s.warmup, active=s.active, repeat=1))
        self._prof.start()

    def on_iteration(self, step: int) -> None:
        if self._prof is None:
            return
        from torch.profiler import ProfilerAction

        self._step = step
        if self._prof.current_action == ProfilerAction.NONE and torch.autograd.profiler._is_profiler_enabled:
            self.error = "another profiler was running (the script's own): no drill-down"
            self._prof = None  # never started: nothing to stop
            return
        self._prof.step()
        self.timer.marking = self._prof.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if step >= self.settings.window[1]:  # recorded and processed: off for good
            self._stop()

    def on_finish(self) -> None:
        self._stop()

    def _stop(self) -> None:
        prof, self._prof = self._prof, None
        self.timer.marking = False
        if prof is not None:
            prof.stop()
            if self.session is not None:
                self.session.unsubscribe(self)

    def _ready(self, prof: Any) -> None:
        first = self.settings.wait + self.settings.warmup + 1
        if self._step < first:  # the run ended before a step was recorded
            return
        self.recorded = (first, self._step)
        steps = self._step - first + 1
        try:
            self.top_ops = top_ops(prof.events(), steps)
            if self.settings.trace:
                os.makedirs(self.settings.trace, exist_ok=True)
                self.trace_path = os.path.join(self.settings.trace, f"pitstop_trace_steps_{first}-{self._step}.json")
                prof.export_chrome_trace(self.trace_path)
        except Exception as exc:  # the drill-down must never break training
            self.error = f"{type(exc).__name__}: {exc}"


def top_ops(events: Any, steps: int) -> dict[str, list[dict[str, Any]]]:
    """Per phase, the ops with the most self time per step (device time when there is any)."""
    ranges = sorted(((e.time_range.start, e.time_range.end, e.name[len("pitstop:"):]) for e in events
                     if e.name.startswith("pitstop:")), key=lambda r: r[1] - r[0])
    by: dict[str, dict[str, list[float]]] = {}
    for e in events:
        if e.name.startswith(("pitstop:", "ProfilerStep")):
            continue
        start = e.time_range.start
        phase = next((p for a, b, p in ranges if a <= start <= b), "other")
        row = by.setdefault(phase, {}).setdefault(e.name, [0.0, 0.0, 0])
        row[0] += e.self_cpu_time_total
        row[1] += getattr(e, "self_device_time_total", 0.0) or 0.0
        row[2] += 1
    out: dict[str, list[dict[str, Any]]] = {}
    for phase, ops in by.items():
        ranked = sorted(ops.items(), key=lambda kv: -(kv[1][1] or kv[1][0]))[:TOP]
        out[phase] = [{"op": name, "ms": (dev or cpu) / 1e3 / steps, "calls": calls / steps,
                       "on": "device" if dev else "host"} for name, (cpu, dev, calls) in ranked]
    return out
