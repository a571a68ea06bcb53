"""``pitstop profile train.py ARGS``: an unmodified script run under the profiler.

The doctor's script runner runs it (as ``__main__``, its own ``sys.argv``, its exit code passed
through, a crash's traceback printed) with a ``Doctor`` that has no checks: its session is the one
set of hooks, the profiler's consumers are subscribed to it, and the doctor's own device reads
(``Readings``) are unsubscribed so that nothing but the profile runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pitstop.profile.api import Profiler
from pitstop.profile.result import ProfileReport
from pitstop.profile.settings import ProfileSettings


def run_profile(path: str, args: list[str], settings: ProfileSettings,
                on_attach: Callable[[Any], None] | None = None) -> tuple[ProfileReport, int]:
    """Run the script under the profiler: the report and the exit code the script would have had.
    ``on_attach(profiler)`` runs once the hooks are in, before the script starts."""
    from pitstop.doctor import Doctor
    from pitstop.doctor.script import run_script

    doctor = Doctor(checks=[])
    doctor.session.unsubscribe(doctor.readings)
    profiler = Profiler(session=doctor.session, settings=settings).attach()
    profiler.command = [path, *args]
    if on_attach is not None:
        on_attach(profiler)
    try:
        outcome, code = run_script(path, args, doctor)
    finally:
        profiler.detach()
    profiler.script = outcome.script
    report = profiler.report
    report.exit = outcome.exit
    if doctor.crash and outcome.exit.get("status") == "crashed":
        profiler.crash = doctor.crash
    return report, code
