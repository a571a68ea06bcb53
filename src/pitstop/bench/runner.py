"""The bench scenario: one group (``group.py``) per batch size, every variant in its own
workers, timed in interleaved rounds until the medians are precise enough or the budget is spent.

Nothing is lost: the JSON file is rewritten after every batch size; Ctrl-C finalises what was
measured and marks the run interrupted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pitstop._env import environment
from pitstop.bench.group import GroupRunner, OnEvent, Source
from pitstop.bench.result import BenchResult
from pitstop.bench.settings import BenchSettings
from pitstop.engine.load import LoadMonitor, merge
from pitstop.engine.source import SpecSource

__all__ = ["BenchRunner", "BenchSettings"]


class BenchRunner:
    """Runs a bench; ``on_event(kind, info)`` reports progress; ``sink(result)`` persists."""

    def __init__(self, source: Source, settings: BenchSettings, *,
                 on_event: OnEvent | None = None, sink: Callable[[BenchResult], None] | None = None) -> None:
        settings = settings.resolved(source)
        self.source, self.settings = source, settings
        self.on_event = on_event or (lambda kind, info: None)
        self.sink = sink or (lambda result: None)
        env = environment(settings.resolved_threads, settings.seed)
        env["device"] = settings.device
        self.result = BenchResult(
            model=source.name, inputs={}, settings=settings.to_dict(), environment=env,
            baseline=settings.baseline,
            claims_key=source.spec.text if isinstance(source, SpecSource) else None,
        )

    def run(self) -> BenchResult:
        """Measure every batch size; returns the result (also on Ctrl-C, marked interrupted)."""
        threads_before = torch.get_num_threads()
        group = GroupRunner(self.source, self.settings, self.on_event)
        loads: list[dict[str, Any]] = []
        try:
            for i, batch_size in enumerate(self.settings.batch_sizes or ()):
                monitor = LoadMonitor().start()  # the machine's load over each group, in the JSON's environment
                try:
                    group.run(batch_size, list(self.settings.variants), self.result.rows, first=i == 0)
                finally:
                    loads.append(monitor.stop())
                    self.result.environment["load"] = merge(loads)
                self.result.inputs = dict(group.inputs)
                self.result.environment["isolation"] = group.isolation
                self.sink(self.result)
            self.result.complete = True
        except KeyboardInterrupt:
            self.result.interrupted = True
        finally:
            group.close()
            torch.set_num_threads(threads_before)
            self.sink(self.result)
        return self.result
