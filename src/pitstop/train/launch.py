"""Where a training variant runs: ``python -m pitstop.train.worker`` in its own process (the
bench launcher's protocol and failure handling, another entry point) or inline."""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from torch.nn import Module

from pitstop.bench.launch import ProcessWorker, WorkerFailed
from pitstop.errors import last_line

__all__ = ["InlineTrainWorker", "TrainProcessWorker", "WorkerFailed"]


class TrainProcessWorker(ProcessWorker):
    """A spawned ``python -m pitstop.train.worker`` process, its output kept in ``log_path``."""

    def __init__(self, log_path: Path, threads: int, extra_env: dict[str, str] | None = None) -> None:
        parent, child = socket.socketpair()
        path = [os.path.abspath(p or os.getcwd()) for p in sys.path if p == "" or os.path.isdir(p)]
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
               "PYTHONPATH": os.pathsep.join(path), **(extra_env or {})}
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pitstop.train.worker", str(child.fileno())],
                pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        child.close()
        self.conn = Connection(parent.detach())
        self.pending = ""
        self.sent_at = self.started_at = time.monotonic()
        self.ready_at: float | None = None  # set by the worker's "ready" message (ProcessWorker.receive)


class InlineTrainWorker:
    """The session in this process, on a private deep copy of the module (no isolation)."""

    def __init__(self, module: Module) -> None:
        from pitstop.train.worker import TrainSession

        self.session = TrainSession()
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
        """Restore the thread count the session changed."""
        self.session.restore()

    kill = close
