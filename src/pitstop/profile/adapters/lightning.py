"""The profiler as a Lightning callback: ``L.Trainer(callbacks=[ProfileCallback()])``.

Attaches when fitting starts (the LightningModule and the trainer's optimizers registered),
prints the report when fitting ends or fails and keeps it on ``callback.report``. Lightning's
loop steps its optimizers with a closure: forward and backward run inside ``optimizer.step`` and
the session counts them as the doctor does, so the phases are the same as in a plain loop. The
callback is the doctor's (``pitstop.hooks.adapters.lightning.WatchingCallback``) watching a
``Profiler``."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require

require("lightning", "pitstop.profile.adapters.lightning")  # the error names what the user imported

from pitstop.hooks.adapters.lightning import WatchingCallback  # noqa: E402


class ProfileCallback(WatchingCallback):
    """Runs a ``Profiler`` over ``trainer.fit``; keyword arguments go to ``ProfileSettings``.
    ``json_path`` also writes the JSON report; ``verbose=False`` keeps the report off stderr."""

    def watch(self, model: Any, optimizer: Any = None) -> Any:
        from pitstop.profile.api import Profiler

        return Profiler(model, optimizer, **self.options)
