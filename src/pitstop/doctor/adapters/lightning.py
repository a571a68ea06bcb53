"""The doctor as a Lightning callback: ``L.Trainer(callbacks=[DoctorCallback()])``.

Attaches when fitting starts (the LightningModule and its optimizers are registered, so
parameters are named ``model.<name>``), prints the report when fitting ends or fails, and keeps
it on ``callback.report``. Lightning's own loop calls ``optimizer.step`` and ``backward``, which
the doctor's hooks see like any other loop. ``WatchingCallback`` is the Lightning side of every
adapter (the profiler's too): ``adapters.base.Watching`` on Lightning's events."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require
from pitstop.doctor.adapters.base import Watching

_L = require("lightning", "pitstop.doctor.adapters.lightning")


class WatchingCallback(Watching, _L.pytorch.Callback):  # type: ignore[name-defined,misc,unused-ignore]
    """A watcher over ``trainer.fit``: attached at fit start, detached and published at its end
    or on an exception."""

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self.start(pl_module, more=trainer.optimizers)

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self.finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.fail(exception)


class DoctorCallback(WatchingCallback):
    """Runs a ``Doctor`` over ``trainer.fit``; keyword arguments go to ``Doctor`` (``guard``, ...).
    ``json_path`` also writes the JSON report; ``verbose=False`` keeps it off stderr."""

    def watch(self, model: Any, optimizer: Any = None) -> Any:
        from pitstop.doctor import Doctor

        return Doctor(model, optimizer, **self.options)
