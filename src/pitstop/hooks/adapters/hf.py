"""The Hugging Face ``Trainer`` side of every adapter: ``WatchingCallback`` maps the Trainer's
``on_train_begin`` / ``on_train_end`` onto ``base.Watching``; the doctor's and the profiler's
callbacks subclass it and say how to make their watcher."""

from __future__ import annotations

from typing import Any

from pitstop._optional import require
from pitstop.hooks.adapters.base import Watching

_transformers = require("transformers", "pitstop.hooks.adapters.hf")


class WatchingCallback(Watching, _transformers.TrainerCallback):  # type: ignore[name-defined,misc,unused-ignore]
    """A watcher over ``trainer.train()``: attached when training begins, published when it ends."""

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None,
                       **kwargs: Any) -> None:
        self.start(model, optimizer)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.finish()
