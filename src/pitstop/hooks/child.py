"""The child side of a script run: ``python -m pitstop.hooks.child FD``.

pitstop's own process (``pitstop.engine.scripts``) never runs the user's code: it checks the
arguments and the output paths, starts this child, sends it the job, collects the documents the
child sends and writes the outputs itself. The child receives one job over the connection ``FD``
and hands it to the capability's runner the job names (``"runner": "pitstop.doctor.child"`` or
``"pitstop.profile.child"``: a module with ``run(job, channel) -> exit code``), which runs the
script under its watcher, sends a snapshot of the report every ``snapshot_s`` seconds (at step
boundaries; under torchrun from rank 0 only, the rank whose parent writes the report) and the
final document, then exits with the script's own exit code. A script that
calls ``os._exit`` still gets its final report (the call is wrapped: report first, then exit)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from pitstop.hooks.consumer import Consumer

SNAPSHOT_SHARE = 0.01  # snapshots take at most 1% of the script's time: their interval grows with their cost


class Channel:
    """Documents to pitstop: snapshots, at most one every ``interval_s`` (longer when making and
    sending one costs more than ``SNAPSHOT_SHARE`` of that: a long run's report grows with its
    steps, and in a DDP job every rank waits for the one making it), then the final one. They
    travel as JSON text, not pickles: unpickling an object of torch's (``torch.__version__`` is
    one) would import torch in the waiting parent, two seconds of a core taken from the script's
    first steps (on every rank of a torchrun job). Under torchrun only rank 0 sends snapshots:
    rank 0's parent writes the job's report, and another rank's snapshot would stall the whole job
    (every rank waits for it in the next all-reduce) for a document nobody reads."""

    def __init__(self, conn: Connection, interval_s: float) -> None:
        self.conn, self.interval_s = conn, interval_s
        self.due = time.monotonic() + interval_s
        from pitstop.ranks import rank

        if rank() != 0:
            self.due = float("inf")
        self.closed = False
        self.sent, self.spent_s = 0, 0.0  # snapshots sent, and the script's time they took

    def snapshot(self, make: Callable[[], dict[str, Any]]) -> None:
        """Send ``make()`` if it is due (a failure here never stops the script)."""
        started = time.monotonic()
        if self.closed or started < self.due:
            return
        try:
            self.conn.send(("snapshot", json.dumps(make())))
            self.sent += 1
        except Exception:  # the report of a run in progress is a courtesy: the run goes on
            pass
        spent = time.monotonic() - started
        self.spent_s += spent
        self.due = time.monotonic() + max(self.interval_s, spent / SNAPSHOT_SHARE)

    def final(self, document: dict[str, Any], code: int) -> None:
        """The final document and the script's exit code (once)."""
        if self.closed:
            return
        self.closed = True
        document["snapshots"] = {"sent": self.sent, "seconds": round(self.spent_s, 4)}  # what they cost the script
        try:
            self.conn.send(("final", json.dumps(document), code))
        except OSError:
            pass


class Snapshots(Consumer):
    """Sends a snapshot of the report at step boundaries, at most every ``interval_s``."""

    def __init__(self, channel: Channel, make: Callable[[], dict[str, Any]]) -> None:
        self.channel, self.make = channel, make

    def on_iteration(self, step: int) -> None:
        self.channel.snapshot(self.make)


def with_environment(doc: dict[str, Any], snapshot: bool = False) -> dict[str, Any]:
    """``doc`` with the machine's record (a snapshot reuses the first one: it reads package metadata)."""
    from pitstop._env import environment

    if not doc.get("environment"):
        if snapshot:
            known = _ENVIRONMENT[0] = _ENVIRONMENT[0] or environment()
            doc["environment"] = dict(known)
        else:
            doc["environment"] = environment()
    return doc


_ENVIRONMENT: list[dict[str, Any] | None] = [None]


def final_on_hard_exit(final: Callable[[int], dict[str, Any]], channel: Channel) -> None:
    """``os._exit(code)`` in the script: the final report first, then the exit."""
    real = os._exit

    def _exit(code: int) -> NoReturn:
        try:
            channel.final(final(code), code)
        except Exception:
            pass
        sys.stdout.flush()
        real(code)

    os._exit = _exit  # type: ignore[assignment]


def _stop_on_sigterm() -> None:
    """SIGTERM (pitstop's --timeout-s, a launcher stopping the job) ends the script as Ctrl-C does:
    the run stops where it is and the report is sent."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt("stopped by SIGTERM")

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str]) -> None:
    """Entry point: receive the job, run it, exit with the script's code."""
    _stop_on_sigterm()
    conn = Connection(int(argv[1]))
    _, job = conn.recv()
    channel = Channel(conn, float(job.get("snapshot_s", 2.0)))
    import importlib

    if not job.get("runner"):
        raise SystemExit(f"pitstop: the job names no runner (command {job.get('command')!r}); this is a bug")
    code = importlib.import_module(job["runner"]).run(job, channel)  # the capability's runner, named by the job
    sys.stdout.flush()
    from pitstop._exit import collect_and_freeze

    collect_and_freeze()  # the script's own atexit handlers still run
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv)
