"""The doctor as a Hugging Face ``Trainer`` callback: ``Trainer(..., callbacks=[DoctorCallback()])``.

Attaches on ``on_train_begin`` (the model and the Trainer's optimizer are registered) and prints
the report on ``on_train_end``; the report stays on ``callback.report``. The Trainer logs a NaN
loss without stopping; here it becomes PIT106 with the step and the first module."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require
from pitstop.doctor import Doctor, DoctorReport

_transformers = require("transformers", "pitstop.doctor.adapters.hf")


class DoctorCallback(_transformers.TrainerCallback):  # type: ignore[name-defined]
    """Runs a ``Doctor`` over ``trainer.train()``; keyword arguments go to ``Doctor``.
    ``json_path`` also writes the JSON report; ``verbose=False`` keeps it off stdout."""

    def __init__(self, *, json_path: str | None = None, verbose: bool = True, **doctor_kwargs: Any) -> None:
        self.doctor_kwargs, self.json_path, self.verbose = doctor_kwargs, json_path, verbose
        self.doctor: Doctor | None = None
        self.report: DoctorReport | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None,
                       **kwargs: Any) -> None:
        self.doctor = Doctor(model, optimizer, **self.doctor_kwargs).attach()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.doctor is None:
            return
        from pitstop.doctor.script import publish

        self.doctor.detach()
        self.report = self.doctor.report()
        self.doctor = None
        publish(self.report, json_path=self.json_path, verbose=self.verbose)
