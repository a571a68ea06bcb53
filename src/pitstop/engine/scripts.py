"""pitstop's side of a script run: start the child, send it the job, keep the documents it sends,
and say how it ended. No torch here: the parent of a doctor or profile run stays light."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pitstop.errors import UsageError

WAKE_S = 1.0  # the waiting parent wakes at most once a second (a DDP rank's core is shared with it: its
# wake-ups delay that rank, and every other rank waits for it in the all-reduce)
# `pitstop train SCRIPT`'s own options: after a script's path they are pitstop's (a script's option of the
# same name goes after `--`); train's parser and `pitstop profile`'s next command read them here
TRAIN_SCRIPT_OPTIONS = ("--time-budget-s", "--steps", "--techniques", "--trajectory-steps", "--tolerance", "--threads",
                        "--seed", "--replicas", "--timeout-s", "--worker-env", "--json", "--html", "--patch",
                        "--nproc-per-node")
CHILD = "pitstop.hooks.child"


def check_script(path: str) -> Path:
    """The script's path, or a usage error naming the problem."""
    script = Path(path)
    if not script.exists():
        raise UsageError(f"script {path!r} not found; give the path of a Python training script")
    if script.is_dir():
        if not (script / "__main__.py").exists():
            raise UsageError(f"{path!r} is a directory without __main__.py; give a .py file")
    elif not script.is_file():
        raise UsageError(f"script {path!r} is not a regular file; give the path of a Python training script")
    return script


@dataclass
class ChildOutcome:
    """What came back: the last document (the final one, else the last snapshot, else None),
    whether it is the final one, the exit code ``python SCRIPT`` would have had (128 + N when a
    signal N killed it) and, when the child did not end normally, how it ended."""

    document: dict[str, Any] | None
    final: bool
    code: int
    ended: str = ""


def run_child(job: dict[str, Any], *, stdout_to_stderr: bool = False, timeout_s: float | None = None,
              env: dict[str, str] | None = None) -> ChildOutcome:
    """Run ``job`` (``{"command": "doctor" | "profile", "runner": its module, "script", "args", ...}``) in a child
    process and wait for it. The child shares the terminal's process group: Ctrl-C reaches the
    script, which ends the run and sends its report; a second Ctrl-C stops the child."""
    parent, child = socket.socketpair()
    out = sys.stderr.fileno() if stdout_to_stderr else None
    proc = subprocess.Popen([sys.executable, "-m", CHILD, str(child.fileno())], pass_fds=[child.fileno()],
                            stdout=out, env={**os.environ, "PYTHONPATH": os.pathsep.join(import_path()),
                                             **(env or {})})
    child.close()
    conn = Connection(parent.detach())
    waiting = _Waiting(proc)
    try:
        conn.send(("job", job))
    except OSError:
        pass  # the child died at once: its exit code says why
    with waiting:
        return waiting.collect(conn, timeout_s)


class _Waiting:
    """The wait for one child: its documents, Ctrl-C and SIGTERM handled meanwhile."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.interrupts = proc, 0
        self.document: dict[str, Any] | None = None
        self.final, self.code = False, 0
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> _Waiting:
        for sig, handler in ((signal.SIGINT, self._interrupt), (signal.SIGTERM, self._terminate)):
            try:
                self.saved[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread: signals stay as they are
                pass
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _interrupt(self, signum: int, frame: Any) -> None:
        """The child got the same Ctrl-C and ends its run; a second one stops it."""
        self.interrupts += 1
        if self.interrupts > 1 and self.proc.poll() is None:
            self.proc.terminate()

    def _terminate(self, signum: int, frame: Any) -> None:
        """A launcher (torchrun, Slurm) stops pitstop: stop the script too."""
        if self.proc.poll() is None:
            self.proc.terminate()

    def collect(self, conn: Connection, timeout_s: float | None) -> ChildOutcome:
        """Documents until the child exits (or ``timeout_s`` passes: then it is killed)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        timed_out, connected = False, True
        while self.proc.poll() is None:
            wait_s = WAKE_S if deadline is None else max(0.0, min(WAKE_S, deadline - time.monotonic()))
            if connected:  # a document, or the child's end of the socket closing, wakes the wait at once
                connected = self._drain(conn, wait_s)
            else:
                try:
                    self.proc.wait(wait_s)
                except subprocess.TimeoutExpired:
                    pass
            if deadline is not None and time.monotonic() > deadline and self.proc.poll() is None:
                timed_out = True
                _stop(self.proc)
        if connected:
            self._drain(conn, 0.0)
        conn.close()
        return self._outcome(self.proc.returncode, timed_out, timeout_s)

    def _drain(self, conn: Connection, wait_s: float) -> bool:
        """The documents that arrive within ``wait_s``; False once the child's end is closed."""
        try:
            while conn.poll(wait_s):
                wait_s = 0.0
                kind, *payload = conn.recv()
                if kind == "snapshot" and not self.final:
                    self.document = json.loads(payload[0])
                elif kind == "final":
                    self.document, self.code, self.final = json.loads(payload[0]), int(payload[1]), True
        except (EOFError, OSError):
            return False
        return True

    def _outcome(self, returncode: int, timed_out: bool, timeout_s: float | None) -> ChildOutcome:
        if timed_out:
            if self.final and self.document is not None:
                self.document["exit"] = {"status": "timed out", "error": f"stopped after its {timeout_s:g} s timeout"}
            return ChildOutcome(self.document, self.final, 124,
                                f"the script was stopped after its timeout of {timeout_s:g} s")
        if returncode < 0:
            name = signal.Signals(-returncode).name
            if self.final:  # the report was complete; the process died on its way out (torch's
                # gloo threads abort at interpreter exit now and then): the report stays, the code too
                return ChildOutcome(self.document, True, 128 - returncode,
                                    f"the script's process was killed by {name} after it sent its final report")
            why = f"was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
            return ChildOutcome(self.document, False, 128 - returncode, f"the script {why}")
        if not self.final:
            return ChildOutcome(self.document, False, returncode,
                                f"the script's process exited with code {returncode} before pitstop's report")
        return ChildOutcome(self.document, True, returncode if returncode else self.code)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the child reports what it measured), then SIGKILL after 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def import_path() -> list[str]:
    """The parent's import path, so the child resolves the same modules (cwd for '')."""
    return [os.path.abspath(p or os.getcwd()) for p in sys.path if p == "" or os.path.isdir(p)]
