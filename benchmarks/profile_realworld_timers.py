"""Hand timers for `benchmarks/profile_realworld.py`: the reference the profile's phases are compared with.

`profile_realworld.py` copies this file next to a prepared script as `_hand_timers.py`; the manifest's
`timers` edits import it and put `time.perf_counter()` marks around the script's own forward, backward,
optimizer step (and batch fetch), calling `add(phase, seconds)` and, once per optimizer step, `step()`.
Each `step()` appends one JSON line to the file named by `PITSTOP_HAND_TIMES`:

    {"wall": s, "forward": s, "backward": s, ...}   # wall: since the previous step() (null for the first)

Phases as the profile defines them: `data` (waiting in DataLoader.__next__: `timed(loader)`), `forward`
(the root module's forward with autograd), `backward` (inside backward()), `optimizer` (inside
`optimizer.step()`); `eval` (a validation between two steps, subtracted from the wall). Other names are
notes the profile has no phase for (it counts them in `other`): `fetch` (a batch not from a DataLoader),
`loss` (a loss computed outside the model), `gap` (a framework's time between two batches), `training_step`.

Frameworks that own the loop get a callback instead of edits: `LightningTimers(root)` (a Lightning
Callback) and `HFTimers()` (a transformers TrainerCallback); see their docstrings. Without
`PITSTOP_HAND_TIMES` nothing is written (the edited script runs as before)."""

from __future__ import annotations

import atexit
import json
import os
from collections.abc import Iterable, Iterator
from time import perf_counter
from typing import Any

_PATH = os.environ.get("PITSTOP_HAND_TIMES")
_acc: dict[str, float] = {}
_lines: list[str] = []
_last: list[float] = []  # the previous step()'s time


def add(phase: str, seconds: float) -> None:
    """Add `seconds` to `phase` of the step in progress."""
    _acc[phase] = _acc.get(phase, 0.0) + seconds


def step() -> None:
    """An optimizer step ended: record its phases and its wall time since the previous step()."""
    now = perf_counter()
    _lines.append(json.dumps({"wall": now - _last[0] if _last else None, **_acc}))
    _acc.clear()
    _last[:] = [now]
    if len(_lines) >= 64:
        flush()


def flush() -> None:
    """Append the recorded steps to the file (at exit, and every 64 steps)."""
    if _PATH and _lines:
        with open(_PATH, "a") as f:
            f.write("\n".join(_lines) + "\n")
    _lines.clear()


atexit.register(flush)


def timed(iterable: Iterable[Any]) -> Iterator[Any]:
    """`iterable`'s items, each `next()` timed as `data` (the iterator itself is made untimed, as the profile does)."""
    it = iter(iterable)
    while True:
        start = perf_counter()
        try:
            item = next(it)
        except StopIteration:
            return
        add("data", perf_counter() - start)
        yield item


def _time_forward(module: Any) -> None:
    """Time `module`'s forwards run with autograd (training forwards) as `forward`."""
    import torch

    start: list[float] = []

    def pre(mod: Any, args: Any) -> None:
        if torch.is_grad_enabled():
            start[:] = [perf_counter()]

    def post(mod: Any, args: Any, out: Any) -> None:
        if start and torch.is_grad_enabled():
            add("forward", perf_counter() - start.pop())

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)


def LightningTimers(root: str) -> Any:  # a factory named as the class it returns
    """A Lightning Callback timing each training step.

    `root`: the LightningModule attribute its training_step calls (the profile's root module).
    forward = that module's training forwards (forward hooks); backward = on_before_backward ->
    on_after_backward; optimizer = the rest of `optimizer.step(closure)` (the torch optimizer's own
    step pre/post hooks: Lightning's closure plumbing, zero_grad, clipping, the update); the step ends
    at the step post hook. Notes: training_step (step pre hook -> on_before_zero_grad: forward + loss +
    logging), gap (on_train_batch_end -> on_train_batch_start: batch fetch + loop). eval: validation."""
    from lightning.pytorch import Callback

    class _Timers(Callback):
        def __init__(self) -> None:
            self.marks: dict[str, float] = {}
            self.step_phases: dict[str, float] = {}

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            _time_forward(getattr(pl_module, root))
            for opt in trainer.optimizers:
                opt.register_step_pre_hook(self._pre)
                opt.register_step_post_hook(self._post)

        def _pre(self, opt: Any, args: Any, kwargs: Any) -> None:
            self.marks["step"] = perf_counter()
            self.step_phases = {p: _acc.get(p, 0.0) for p in ("forward", "backward")}

        def _post(self, opt: Any, args: Any, kwargs: Any) -> None:
            inside = {p: _acc.get(p, 0.0) - self.step_phases[p] for p in self.step_phases}
            add("optimizer", perf_counter() - self.marks["step"] - sum(inside.values()))
            step()

        def on_before_zero_grad(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
            if "step" in self.marks:
                add("training_step", perf_counter() - self.marks["step"])

        def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
            self.marks["backward"] = perf_counter()

        def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
            add("backward", perf_counter() - self.marks["backward"])

        def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
            if "batch_end" in self.marks:
                add("gap", perf_counter() - self.marks.pop("batch_end"))

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            self.marks["batch_end"] = perf_counter()

        def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
            self.marks["eval"] = perf_counter()

        def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
            add("eval", perf_counter() - self.marks["eval"])
            self.marks.pop("batch_end", None)  # the next gap would hold the validation

    return _Timers()


def HFTimers() -> Any:  # a factory named as the class it returns
    """A transformers TrainerCallback timing each training step.

    forward = the model's training forwards (forward hooks; the model computes its loss inside);
    backward = from the loss's gradient to the end of the autograd pass (a hook on the loss tensor and
    the engine's end-of-backward callback: the Trainer's backward runs inside its training_step, where
    no callback reaches); optimizer = on_pre_optimizer_step -> on_optimizer_step (the Trainer's
    `optimizer.step()`). Notes: gap (on_step_end -> on_step_begin: the batch prefetch, logging).
    eval: from on_step_end to on_evaluate."""
    import torch
    from transformers import TrainerCallback

    def watch_backward(out: Any) -> None:
        loss = out.get("loss") if hasattr(out, "get") else None
        if isinstance(loss, torch.Tensor) and loss.requires_grad:
            loss.register_hook(started)

    def started(grad: Any) -> None:
        begin = perf_counter()
        torch.autograd.Variable._execution_engine.queue_callback(lambda: add("backward", perf_counter() - begin))

    class _Timers(TrainerCallback):
        def __init__(self) -> None:
            self.marks: dict[str, float] = {}

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            _time_forward(model)
            model.register_forward_hook(lambda mod, a, out: watch_backward(out) if torch.is_grad_enabled() else None)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if "step_end" in self.marks:
                add("gap", perf_counter() - self.marks.pop("step_end"))

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.marks["optimizer"] = perf_counter()

        def on_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            add("optimizer", perf_counter() - self.marks["optimizer"])
            step()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.marks["step_end"] = perf_counter()

        def on_evaluate(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if "step_end" in self.marks:
                add("eval", perf_counter() - self.marks.pop("step_end"))

    return _Timers()
