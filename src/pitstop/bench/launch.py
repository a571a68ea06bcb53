"""bench's workers: ``pitstop.engine.launch``'s process and inline workers running bench's
``VariantSession`` (``pitstop.bench.worker``)."""

from __future__ import annotations

from torch.nn import Module

from pitstop.engine.launch import InlineWorker, ProcessWorker, WorkerFailed

__all__ = ["BenchInlineWorker", "BenchProcessWorker", "WorkerFailed"]


class BenchProcessWorker(ProcessWorker):
    """A ``python -m pitstop.bench.worker`` process."""

    MODULE = "pitstop.bench.worker"


class BenchInlineWorker(InlineWorker):
    """bench's session in this process, on a private deep copy of the module (no isolation)."""

    def __init__(self, module: Module) -> None:
        from pitstop.bench.worker import VariantSession

        super().__init__(VariantSession(), module)
