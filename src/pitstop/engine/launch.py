"""Where a variant runs: in an isolated worker process (default) or inline.

Both launchers expose ``send(method, **kwargs)`` then ``receive(timeout_s)``; a worker that
raises, dies (segfault, abort, out-of-memory kill) or hangs past the time-out raises
``WorkerFailed`` with a one-line reason, and only that variant is lost."""

from __future__ import annotations

import copy
import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from torch.nn import Module

from pitstop.engine import forkserver
from pitstop.errors import last_line

START_LIMIT_S = 120.0  # process start and imports (torch, the model's file) on a loaded machine


class WorkerFailed(Exception):
    """A variant's worker failed; ``str(exc)`` is the reason shown to the user."""


class ProcessWorker:
    """A ``python -m MODULE FD`` process serving a session (a fork of the run's fork server where it
    can be: ``pitstop.engine.forkserver``), its output kept in ``log_path``. Each capability's
    subclass names its worker module (bench's ``pitstop.bench.worker``, train's, generate's, a
    script child's)."""

    MODULE = ""  # what the process runs: set by the subclass

    def __init__(self, log_path: Path, threads: int | None, extra_env: dict[str, str] | None = None) -> None:
        parent, child = socket.socketpair()
        pinned = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)} if threads else {}
        env = {**os.environ, **pinned, "PYTHONPATH": os.pathsep.join(_import_path()), **(extra_env or {})}
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.proc: subprocess.Popen[bytes] | forkserver.ForkedProcess
            self.proc = self._fork(env, log, child) or subprocess.Popen(
                [sys.executable, "-m", self.MODULE, str(child.fileno())],
                pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=env,
                start_new_session=True,  # Ctrl-C goes to the parent, which stops workers itself
            )
        child.close()
        self.conn = Connection(parent.detach())
        self.pending = ""
        self.sent_at = self.started_at = time.monotonic()
        self.ready_at: float | None = None  # when the worker was up (imports done), by its own report

    def _fork(self, env: dict[str, str], log: Any, child: socket.socket) -> forkserver.ForkedProcess | None:
        """The worker as a fork of this run's fork server (torch already imported), or None where
        it cannot be one (its environment, the platform, the server gone): then a new process."""
        if not forkserver.usable(env) or (srv := forkserver.server()) is None:
            return None
        try:
            return srv.spawn(self.MODULE, env, log.fileno(), child.fileno())
        except OSError:
            return None

    def send(self, method: str, **kwargs: Any) -> None:
        """Start a request (its time-out counts from now, or from when the worker is up)."""
        self.pending, self.sent_at = method, time.monotonic()
        try:
            self.conn.send((method, kwargs))
        except OSError:
            self._raise_dead()

    def receive(self, timeout_s: float) -> Any:
        """Wait for the pending request's answer: at most ``timeout_s`` from when it was sent or,
        if later, from when the worker was up. Requests sent to several workers at once thus run
        their time-outs in parallel (hung set-ups cost one time-out, not one each), and process
        start-up under load is limited apart (``START_LIMIT_S``, or the time-out if longer)."""
        while True:
            if self.ready_at is None:
                deadline = self.started_at + max(START_LIMIT_S, timeout_s)
                what = f"did not start within {max(START_LIMIT_S, timeout_s):.3g} s"
            else:
                deadline = max(self.sent_at, self.ready_at) + timeout_s
                what = f"timed out after {timeout_s:.3g} s in {self.pending} (timeout_s)"
            if self.conn.poll(0.05):
                try:
                    reply = self.conn.recv()
                except (EOFError, OSError):
                    self.proc.wait(timeout=5)
                    self._raise_dead()
                if reply[0] == "ready":
                    self.ready_at = reply[1]
                    continue
                return _unwrap(reply, self.pending)
            if self.proc.poll() is not None:
                self._raise_dead()
            if time.monotonic() > deadline:
                self.kill()
                raise WorkerFailed(what)

    def _raise_dead(self) -> None:
        code = self.proc.wait(timeout=5)
        if code < 0:
            name = signal.Signals(-code).name
            how = f"was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
        else:
            how = f"exited with code {code}"
        tail = _last_line(self.log_path)
        raise WorkerFailed(f"worker {how} during {self.pending}" + (f": {tail}" if tail else ""))

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        if self.proc.poll() is None:
            try:
                self.conn.send(("exit", {}))
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self.conn.close()

    def kill(self) -> None:
        """Kill the worker now, and the processes it started (a script's DataLoader workers): it
        leads its own process group."""
        if self.proc.poll() is None:
            from pitstop.engine.load import killed_group

            killed_group(self.proc.pid)  # their CPU stays ours: the load monitor must not call it another's
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()
            self.proc.wait()


class InlineWorker:
    """Runs the session in this process (no isolation: for models that cannot be sent to a worker).

    Each inline variant gets its own deep copy of the module: a train-mode variant updates
    batch-norm statistics, which must not leak into the other variants or the user's model."""

    def __init__(self, session: Any, module: Module | None) -> None:
        self.session = session  # the capability's session object (bench's VariantSession, train's TrainSession)
        self.module = module
        self.pending: tuple[str, dict[str, Any]] = ("", {})

    def send(self, method: str, **kwargs: Any) -> None:
        """Record the request; it runs in ``receive``."""
        if method == "setup":
            kwargs = {**kwargs, "module": copy.deepcopy(self.module)}
        self.pending = (method, kwargs)

    def receive(self, timeout_s: float) -> Any:
        """Run the pending request (time-outs cannot be enforced inline)."""
        method, kwargs = self.pending
        try:
            return getattr(self.session, method)(**kwargs)
        except Exception as exc:
            raise WorkerFailed(f"{method} raised {last_line(exc)}") from exc

    def close(self) -> None:
        """Nothing to stop."""

    kill = close


def _unwrap(reply: tuple[Any, ...], method: str) -> Any:
    if reply[0] == "ok":
        return reply[1]
    raise WorkerFailed(f"{method} raised {reply[1]}")


def _import_path() -> list[str]:
    """The parent's import path, so the worker resolves the same modules (cwd for '')."""
    return [os.path.abspath(p or os.getcwd()) for p in sys.path if p == "" or os.path.isdir(p)]


def last_line_of(path: Path) -> str:
    """The last non-empty line of a worker's log (cut to 300 characters), or ""."""
    return _last_line(path)


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""
