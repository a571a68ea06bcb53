"""The profiler as a Hugging Face ``Trainer`` callback: ``Trainer(..., callbacks=[ProfileCallback()])``.

Attaches on ``on_train_begin`` (the model and the Trainer's optimizer registered) and prints the
report on ``on_train_end``; the report stays on ``callback.report``."""

from __future__ import annotations

import sys
from typing import Any

from pitstop._optional import require
from pitstop.profile.api import Profiler
from pitstop.profile.result import ProfileReport

_transformers = require("transformers", "pitstop.profile.adapters.hf")


class ProfileCallback(_transformers.TrainerCallback):  # type: ignore[name-defined]
    """Runs a ``Profiler`` over ``trainer.train()``; keyword arguments go to ``ProfileSettings``.
    ``verbose=False`` keeps the report off stderr."""

    def __init__(self, *, verbose: bool = True, **options: Any) -> None:
        self.options, self.verbose = options, verbose
        self.profiler: Profiler | None = None
        self.report: ProfileReport | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None,
                       **kwargs: Any) -> None:
        self.profiler = Profiler(model, optimizer, **self.options).attach()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.profiler is None:
            return
        self.profiler.detach()
        self.report, self.profiler = self.profiler.report, None
        if self.verbose:
            print(self.report, file=sys.stderr)
