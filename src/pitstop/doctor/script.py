"""``pitstop doctor train.py ARGS``: an unmodified script run under the doctor (the runner is
``pitstop.hooks.script``, shared with the profiler)."""

from __future__ import annotations

from pitstop.doctor.api import Doctor
from pitstop.doctor.result import DoctorReport
from pitstop.hooks.script import ScriptRun, publish, run_main

__all__ = ["publish", "run_script"]


def run_script(path: str, args: list[str], doctor: Doctor) -> tuple[DoctorReport, int]:
    """Run the script under ``doctor``; the report and the exit code the script would have had
    (1 for an uncaught exception, its own for ``sys.exit``, 130 for Ctrl-C). The script's
    namespace stays alive until the doctor has finished: end-of-run checks still see its model."""

    def explain(exc: BaseException) -> dict[str, str] | None:
        doctor.explain(exc)
        return doctor.crash

    run: ScriptRun = run_main(path, args, doctor.attach, doctor.detach, explain)
    if run.code == 130:
        doctor.crash = run.crash
    report = doctor.report()
    run.namespace = None  # the script's objects may go now
    report.script = run.command
    if run.code == 130:
        report.exit = {"status": "interrupted", **(doctor.crash or {})}
    elif run.code and report.exit.get("status") == "ok":
        report.exit = {"status": "exited", "code": run.code}
    return report, run.code
