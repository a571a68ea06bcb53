"""The doctor as a Lightning callback: ``L.Trainer(callbacks=[DoctorCallback()])``.

Attaches when fitting starts (the LightningModule and its optimizers are registered, so
parameters are named ``model.<name>``), prints the report when fitting ends or fails, and keeps
it on ``callback.report``. Lightning's own loop calls ``optimizer.step`` and ``backward``, which
the doctor's hooks see like any other loop. ``WatchingCallback`` is the Lightning side of every
adapter (the profiler's too): ``adapters.base.Watching`` on Lightning's events."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require

require("lightning", "pitstop.doctor.adapters.lightning")  # the error names what the user imported

from pitstop.hooks.adapters.lightning import WatchingCallback  # noqa: E402


class DoctorCallback(WatchingCallback):
    """Runs a ``Doctor`` over ``trainer.fit``; keyword arguments go to ``Doctor`` (``guard``, ...).
    ``json_path`` also writes the JSON report; ``verbose=False`` keeps it off stderr."""

    def watch(self, model: Any, optimizer: Any = None) -> Any:
        from pitstop.doctor import Doctor

        return Doctor(model, optimizer, **self.options)
