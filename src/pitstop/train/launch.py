"""Where a training variant runs: ``python -m pitstop.train.worker`` in its own process (the
bench launcher's protocol and failure handling, another entry point) or inline."""

from __future__ import annotations

from torch.nn import Module

from pitstop.bench.launch import InlineWorker, ProcessWorker, WorkerFailed

__all__ = ["InlineTrainWorker", "TrainProcessWorker", "WorkerFailed"]


class TrainProcessWorker(ProcessWorker):
    """A spawned ``python -m pitstop.train.worker`` process, its output kept in ``log_path``."""

    MODULE = "pitstop.train.worker"


class InlineTrainWorker(InlineWorker):
    """The session in this process, on a private deep copy of the module (no isolation)."""

    def __init__(self, module: Module | None) -> None:
        from pitstop.train.worker import TrainSession

        self.session = TrainSession()  # type: ignore[assignment]
        self.module = module  # type: ignore[assignment]  # None: an inspection, given its objects
        self.pending = ("", {})

    def close(self) -> None:
        """Restore the thread count the session changed."""
        self.session.restore()  # type: ignore[attr-defined]

    kill = close
