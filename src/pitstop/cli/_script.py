"""The end of a doctor or profile run: the script's child process run, its report written and
printed (rank 0 only under torchrun), the script's exit code passed on."""

from __future__ import annotations

import sys
from typing import Any


def finish_script_run(output: Any, job: dict[str, Any], timeout_s: float | None = None,
                      seen: Any = None) -> int:
    """Run ``job`` in the script's child process, then write and print what came back: the final
    report, else the last snapshot marked as such (``seen(doc)`` looks at it first); the exit code is
    the script's own."""
    from pitstop.engine.scripts import run_child

    outcome = run_child(job, stdout_to_stderr=output.to_stdout, timeout_s=timeout_s)
    doc = outcome.document
    from pitstop.ranks import rank as this_rank

    rank = this_rank()
    if doc is None:
        reason = outcome.ended or "the script's process sent no report"
        if rank:  # its snapshots are not sent (rank 0 reports for the job): nothing is lost here
            print(f"pitstop: rank {rank}: {reason}", file=sys.stderr)
        else:
            print(f"pitstop: {reason}; no report: nothing was measured", file=sys.stderr)
        return outcome.code or 1
    if not outcome.final:
        status = "timed out" if "timeout of" in outcome.ended else "killed" if "killed" in outcome.ended else "exited"
        doc["exit"] = {"status": status, "code": outcome.code,
                       "error": f"{outcome.ended}; this report is the last snapshot it sent"}
    elif outcome.ended:  # complete, then killed on its way out: said, and the code passed on
        doc["exit"] = {**(doc.get("exit") or {}), "after_report": outcome.ended, "code": outcome.code}
        print(f"pitstop: {outcome.ended} (exit code {outcome.code}); the report is complete", file=sys.stderr)
    if rank == 0:  # under torchrun, rank 0 reports for the job
        if seen is not None:
            seen(doc)
        output.finish(doc)
    return outcome.code
