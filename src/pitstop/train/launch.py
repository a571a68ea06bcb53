"""Where a training variant runs: ``python -m pitstop.train.worker`` in its own process (the
engine's launcher: its protocol and failure handling, train's entry point) or inline."""

from __future__ import annotations

from torch.nn import Module

from pitstop.engine.launch import InlineWorker, ProcessWorker, WorkerFailed

__all__ = ["InlineTrainWorker", "TrainProcessWorker", "WorkerFailed"]


class TrainProcessWorker(ProcessWorker):
    """A spawned ``python -m pitstop.train.worker`` process, its output kept in ``log_path``."""

    MODULE = "pitstop.train.worker"


class InlineTrainWorker(InlineWorker):
    """The session in this process, on a private deep copy of the module (no isolation)."""

    def __init__(self, module: Module | None) -> None:
        from pitstop.train.worker import TrainSession

        super().__init__(TrainSession(), module)  # module None: an inspection, given its objects

    def close(self) -> None:
        """Restore the thread count the session changed."""
        self.session.restore()

    kill = close
