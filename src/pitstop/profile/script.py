"""``pitstop profile train.py ARGS``: an unmodified script run under the profiler.

The shared script runner (``pitstop.hooks.script``) runs it (as ``__main__``, its own
``sys.argv``, its exit code passed through, a crash's traceback printed) while a ``Profiler`` with
its own session (the one set of hooks) watches it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pitstop.hooks.script import exit_record, run_main
from pitstop.profile.api import Profiler
from pitstop.profile.result import ProfileReport
from pitstop.profile.settings import ProfileSettings


def run_profile(path: str, args: list[str], settings: ProfileSettings,
                on_attach: Callable[[Any], None] | None = None) -> tuple[ProfileReport, int]:
    """Run the script under the profiler: the report and the exit code the script would have had.
    ``on_attach(profiler)`` runs once the hooks are in, before the script starts."""
    profiler = Profiler(settings=settings).attach()
    profiler.command = [path, *args]
    if on_attach is not None:
        on_attach(profiler)
    try:
        run = run_main(path, args, attach=lambda: None, detach=lambda: None)  # the profiler is attached already
    finally:
        profiler.detach()
    profiler.script = run.command
    report = profiler.report
    report.exit = exit_record(run)
    if run.crash and report.exit["status"] == "crashed":
        profiler.crash = run.crash
    return report, run.code
