"""The profiler as a Hugging Face ``Trainer`` callback: ``Trainer(..., callbacks=[ProfileCallback()])``.

Attaches on ``on_train_begin`` (the model and the Trainer's optimizer registered) and prints the
report on ``on_train_end``; the report stays on ``callback.report``. The callback is the
shared one (``pitstop.hooks.adapters.hf.WatchingCallback``) watching a ``Profiler``."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require

require("transformers", "pitstop.profile.adapters.hf")  # the error names what the user imported

from pitstop.hooks.adapters.hf import WatchingCallback  # noqa: E402


class ProfileCallback(WatchingCallback):
    """Runs a ``Profiler`` over ``trainer.train()``; keyword arguments go to ``ProfileSettings``.
    ``json_path`` also writes the JSON report; ``verbose=False`` keeps the report off stderr."""

    def watch(self, model: Any, optimizer: Any = None) -> Any:
        from pitstop.profile.api import Profiler

        return Profiler(model, optimizer, **self.options)
