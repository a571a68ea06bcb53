"""What a session sees besides optimizer steps: parameters updated by hand after a backward
(``p.data.add_(p.grad, alpha=-lr)``: counted as steps) and worker processes the script starts
(hogwild training: named as not watched, since their hooks are not ours)."""

from __future__ import annotations

import multiprocessing.process as _mp_process
from typing import Any, Protocol

import torch

from pitstop.hooks.consumer import Consumer


class Steps(Protocol):
    """What ``ManualSteps`` asks of the doctor's ``Session`` (which makes it: a protocol, not an import)."""

    def unsubscribe(self, consumer: Any) -> None: ...

    def manual_step(self) -> None: ...

SAMPLED_PARAMS, SAMPLED_VALUES = 8, 64


def _sample(p: torch.Tensor) -> torch.Tensor:
    """Up to ``SAMPLED_VALUES`` values spread over ``p`` (copied)."""
    flat = p.detach().reshape(-1)
    return flat[:: max(1, flat.numel() // SAMPLED_VALUES)][:SAMPLED_VALUES].clone()


class ManualSteps(Consumer):
    """Until an optimizer steps: after each backward, a sample of the parameters that got
    gradients is kept; when the next forward or backward starts and a sample moved, the
    parameters were updated by hand, and that is a step. Once an optimizer steps, this consumer
    unsubscribes (no cost for ordinary loops)."""

    def __init__(self, session: Steps) -> None:
        self.session = session
        self.params: list[torch.Tensor] = []
        self.samples: list[torch.Tensor] = []
        self.steps = 0

    def on_grad(self, param: torch.Tensor) -> None:
        if len(self.params) < SAMPLED_PARAMS and not any(p is param for p in self.params):
            self.params.append(param)

    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None:
        self.samples = [_sample(p) for p in self.params]

    def on_root_forward_start(self, module: Any) -> None:
        self._check()

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool,
                    site: str) -> None:
        self._check()

    def on_finish(self) -> None:
        self._check()

    def on_step_start(self, optimizer: torch.optim.Optimizer) -> None:
        self.params, self.samples = [], []
        self.session.unsubscribe(self)  # an optimizer counts the steps

    def _check(self) -> None:
        if not self.samples:
            return
        samples, self.samples = self.samples, []
        if any(not torch.equal(_sample(p), s) for p, s in zip(self.params, samples, strict=True)):
            self.steps += 1
            self.session.manual_step()


class Workers:
    """Processes the script starts while the session is attached (DataLoader workers excepted):
    ``started`` lists ``(target, start method)``."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []
        self._orig: Any = None

    def attach(self) -> None:
        if self._orig is not None:
            return
        orig, started = _mp_process.BaseProcess.start, self.started
        self._orig = orig

        def start(process: Any) -> None:
            target = getattr(process, "_target", None)
            name = getattr(target, "__qualname__", type(process).__name__)
            if getattr(target, "__module__", "") != "torch.utils.data._utils.worker":
                method = getattr(process, "_start_method", None) or _start_method()
                started.append((name, method))
            orig(process)

        _mp_process.BaseProcess.start = start  # type: ignore[method-assign,assignment]

    def detach(self) -> None:
        if self._orig is not None:
            _mp_process.BaseProcess.start = self._orig  # type: ignore[method-assign]
            self._orig = None

    def not_watched(self) -> list[str]:
        """One line per target started in other processes."""
        by_target: dict[tuple[str, str], int] = {}
        for key in self.started:
            by_target[key] = by_target.get(key, 0) + 1
        return [f"{n} worker process(es) running `{target}` (started with {method}): what they train is not "
                f"watched (their hooks are not the doctor's); run `with pitstop.doctor():` inside `{target}` "
                f"to watch one" for (target, method), n in by_target.items()]


def _start_method() -> str:
    import multiprocessing

    return multiprocessing.get_start_method(allow_none=True) or "the default method"
