"""The doctor as a Lightning callback: ``L.Trainer(callbacks=[DoctorCallback()])``.

Attaches when fitting starts (the LightningModule and its optimizers are registered, so
parameters are named ``model.<name>``), prints the report when fitting ends or fails, and keeps
it on ``callback.report``. Lightning's own loop calls ``optimizer.step`` and ``backward``, which
the doctor's hooks see like any other loop."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require
from pitstop.doctor import Doctor, DoctorReport

_L = require("lightning", "pitstop.doctor.adapters.lightning")


class DoctorCallback(_L.pytorch.Callback):  # type: ignore[name-defined]
    """Runs a ``Doctor`` over ``trainer.fit``; keyword arguments go to ``Doctor`` (``guard``, ...).
    ``json_path`` also writes the JSON report; ``verbose=False`` keeps it off stdout."""

    def __init__(self, *, json_path: str | None = None, verbose: bool = True, **doctor_kwargs: Any) -> None:
        super().__init__()
        self.doctor_kwargs, self.json_path, self.verbose = doctor_kwargs, json_path, verbose
        self.doctor: Doctor | None = None
        self.report: DoctorReport | None = None

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self.doctor = Doctor(pl_module, **self.doctor_kwargs).attach()
        for opt in trainer.optimizers:
            self.doctor.session.add_optimizer(getattr(opt, "optimizer", opt))

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self._finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self.doctor is not None:
            self.doctor.explain(exception)
        self._finish()

    def _finish(self) -> None:
        if self.doctor is None:
            return
        from pitstop.doctor.script import publish

        self.doctor.detach()
        self.report = self.doctor.report()
        self.doctor = None
        publish(self.report, json_path=self.json_path, verbose=self.verbose)
