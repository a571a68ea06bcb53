"""The base of a session's consumers: a no-op ``on_<event>`` method per event, one-line
docstring each; a consumer overrides what it needs and only that is ever called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import nn

F = TypeVar("F", bound=Callable[..., Any])


def noop(fn: F) -> F:
    """Marks a base class's event method: a consumer that does not override it is not called."""
    fn.__pitstop_noop__ = True  # type: ignore[attr-defined]
    return fn


class Consumer:
    """Receives a session's events; override the ``on_<event>`` methods needed."""

    @noop
    def on_data_start(self) -> None:
        """The loop asks the DataLoader for its next batch."""

    @noop
    def on_data(self, wait_s: float) -> None:
        """The batch arrived after ``wait_s`` seconds."""

    @noop
    def on_root_forward_start(self, module: nn.Module) -> None:
        """A root module (called from outside any module) starts its forward."""

    @noop
    def on_module_forward(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        """A leaf module (no children) finished its forward."""

    @noop
    def on_root_forward(self, module: nn.Module, output: Any, grad_enabled: bool) -> None:
        """A root module finished its forward (``grad_enabled``: autograd was recording)."""

    @noop
    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool,
                    site: str) -> None:
        """``backward()`` is about to run on ``tensors``, called at ``site`` (``file.py:LINE``)."""

    @noop
    def on_grad(self, param: torch.Tensor) -> None:
        """A parameter's gradient was accumulated (in backward order)."""

    @noop
    def on_zero_grad(self, owner: torch.optim.Optimizer | nn.Module) -> None:
        """``owner.zero_grad()`` was called (an optimizer's or a module's): its gradients are cleared."""

    @noop
    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None:
        """``backward()`` returned."""

    @noop
    def on_step_start(self, optimizer: torch.optim.Optimizer) -> None:
        """``optimizer.step()`` was called (with a closure, before the closure runs)."""

    @noop
    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        """The update is about to apply known gradients (with a closure: after step() ran it)."""

    @noop
    def on_step_done(self, optimizer: torch.optim.Optimizer) -> None:
        """``optimizer.step()`` returned."""

    @noop
    def on_iteration(self, step: int) -> None:
        """Training step ``step`` completed (each active optimizer stepped once)."""

    @noop
    def on_finish(self) -> None:
        """The session detaches: the last event."""
