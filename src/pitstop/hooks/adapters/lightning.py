"""The Lightning side of every adapter: ``WatchingCallback`` maps fit start, fit end and an
exception onto ``base.Watching``; the doctor's and the profiler's callbacks subclass it and say how
to make their watcher."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require
from pitstop.hooks.adapters.base import Watching

_L = require("lightning", "pitstop.hooks.adapters.lightning")


class WatchingCallback(Watching, _L.pytorch.Callback):  # type: ignore[name-defined,misc,unused-ignore]
    """A watcher over ``trainer.fit``: attached at fit start, detached and published at its end
    or on an exception."""

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self.start(pl_module, more=trainer.optimizers)

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self.finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.fail(exception)
