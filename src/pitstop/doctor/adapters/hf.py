"""The doctor as a Hugging Face ``Trainer`` callback: ``Trainer(..., callbacks=[DoctorCallback()])``.

Attaches on ``on_train_begin`` (the model and the Trainer's optimizer are registered) and prints
the report on ``on_train_end``; the report stays on ``callback.report``. The Trainer logs a NaN
loss without stopping; here it becomes PIT106 with the step and the first module.
``WatchingCallback`` is the Hugging Face side of every adapter (the profiler's too)."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require

require("transformers", "pitstop.doctor.adapters.hf")  # the error names what the user imported

from pitstop.hooks.adapters.hf import WatchingCallback  # noqa: E402


class DoctorCallback(WatchingCallback):
    """Runs a ``Doctor`` over ``trainer.train()``; keyword arguments go to ``Doctor``.
    ``json_path`` also writes the JSON report; ``verbose=False`` keeps it off stderr."""

    def watch(self, model: Any, optimizer: Any = None) -> Any:
        from pitstop.doctor import Doctor

        return Doctor(model, optimizer, **self.options)
