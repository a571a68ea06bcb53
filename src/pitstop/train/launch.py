"""Where a training variant runs: ``python -m pitstop.train.worker`` in its own process (the
bench launcher's protocol and failure handling, another entry point) or inline."""

from __future__ import annotations

import copy
from typing import Any

from torch.nn import Module

from pitstop.bench.launch import ProcessWorker, WorkerFailed
from pitstop.errors import last_line

__all__ = ["InlineTrainWorker", "TrainProcessWorker", "WorkerFailed"]


class TrainProcessWorker(ProcessWorker):
    """A spawned ``python -m pitstop.train.worker`` process, its output kept in ``log_path``."""

    MODULE = "pitstop.train.worker"


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
