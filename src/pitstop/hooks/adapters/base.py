"""What every framework adapter does, whatever it watches (the doctor, the profiler) and whichever
framework calls it (Lightning, Hugging Face): make the watcher over the model and its optimizers
when training starts, let it explain an exception, detach it when training ends, keep its report
on ``callback.report`` and publish it (rank 0 prints it; ``json_path`` also writes its JSON).
A framework's callback class mixes this in and maps its own events onto ``start`` / ``fail`` /
``finish``; a watcher's callback says only how to make the watcher (``watch``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


class Watching:
    """The run of one watcher (``Doctor`` or ``Profiler``: ``attach``, ``detach``, ``explain``,
    ``session``, ``report``) over a framework's training; keyword options go to the watcher."""

    def __init__(self, *, json_path: str | None = None, verbose: bool = True, **options: Any) -> None:
        super().__init__()
        if json_path and json_path != "-":  # checked and made absolute now: before training, and
            from pitstop._io import check_writable  # a script that changes directory still writes here

            check_writable(json_path)
            json_path = str(Path(json_path).absolute())
        self.options, self.json_path, self.verbose = options, json_path, verbose
        self.watcher: Any = None
        self.report: Any = None

    def watch(self, model: Any, optimizer: Any = None) -> Any:
        """A new, detached watcher over ``model`` (and ``optimizer``)."""
        raise NotImplementedError

    def start(self, model: Any, optimizer: Any = None, more: Iterable[Any] = ()) -> None:
        """Training starts: attach a watcher over ``model`` and ``optimizer``; the ``more``
        optimizers (unwrapped from the framework's) registered after."""
        self.watcher = self.watch(model, optimizer).attach()
        for opt in more:
            self.watcher.session.add_optimizer(getattr(opt, "optimizer", opt))

    def fail(self, exception: BaseException) -> None:
        """Training raised: the watcher explains it (a finding), then the run ends."""
        if self.watcher is not None:
            self.watcher.explain(exception)
        self.finish()

    def finish(self) -> None:
        """Training ended: detach, keep the report, publish it."""
        if self.watcher is None:
            return
        from pitstop.hooks.script import publish

        self.watcher.detach()
        report = self.watcher.report
        self.report, self.watcher = report() if callable(report) else report, None
        publish(self.report, json_path=self.json_path, verbose=self.verbose)
