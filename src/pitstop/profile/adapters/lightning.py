"""The profiler as a Lightning callback: ``L.Trainer(callbacks=[ProfileCallback()])``.

Attaches when fitting starts (the LightningModule and the trainer's optimizers registered),
prints the report when fitting ends or fails and keeps it on ``callback.report``. Lightning's
loop steps its optimizers with a closure: forward and backward run inside ``optimizer.step`` and
the session counts them as the doctor does, so the phases are the same as in a plain loop."""

from __future__ import annotations

import sys
from typing import Any

from pitstop._optional import require
from pitstop.profile.api import Profiler
from pitstop.profile.result import ProfileReport

_L = require("lightning", "pitstop.profile.adapters.lightning")


class ProfileCallback(_L.pytorch.Callback):  # type: ignore[name-defined]
    """Runs a ``Profiler`` over ``trainer.fit``; keyword arguments go to ``ProfileSettings``.
    ``verbose=False`` keeps the report off stderr."""

    def __init__(self, *, verbose: bool = True, **options: Any) -> None:
        super().__init__()
        self.options, self.verbose = options, verbose
        self.profiler: Profiler | None = None
        self.report: ProfileReport | None = None

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self.profiler = Profiler(pl_module, **self.options).attach()
        for opt in trainer.optimizers:
            self.profiler.session.add_optimizer(getattr(opt, "optimizer", opt))

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self._finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self.profiler is not None:
            self.profiler.explain(exception)
        self._finish()

    def _finish(self) -> None:
        if self.profiler is None:
            return
        self.profiler.detach()
        self.report, self.profiler = self.profiler.report, None
        if self.verbose:
            print(self.report, file=sys.stderr)
