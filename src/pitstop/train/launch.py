"""Where a training variant runs: ``python -m pitstop.train.worker`` in its own process (the
engine's launcher: its protocol and failure handling, train's entry point), inline, or a script
variant's torchrun ranks (the engine's torchrun launcher running train's script child)."""

from __future__ import annotations

from torch.nn import Module

from pitstop.engine.launch import InlineWorker, ProcessWorker, WorkerFailed
from pitstop.engine.torchrun import TorchrunWorker

__all__ = ["InlineTrainWorker", "ScriptRanks", "TrainProcessWorker", "WorkerFailed"]


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


class ScriptRanks(TorchrunWorker):
    """A script variant's ``--nproc-per-node`` ranks (``pitstop.engine.torchrun``), each running the
    script's child."""

    MODULE = "pitstop.train.script.child"
