"""The grad-mode axis: train or eval mode, and autograd on (``grad``), off (``no_grad``) or
``inference_mode``. The config's ``mode`` and ``grad`` fields; the recipe sets the mode and wraps each
call in the grad context."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal

import torch

from pitstop.bench.variants.base import Axes, Code, Target, Technique

Mode = Literal["train", "eval"]
Grad = Literal["grad", "no_grad", "inference_mode"]
MODES: tuple[str, ...] = ("train", "eval")
GRAD_CONTEXTS: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
    "grad": torch.enable_grad,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}


class GradMode(Technique):
    """The mode (``model.eval()`` / ``train()``) and the grad context around each call."""

    axis = "grad"

    def code(self, config: Axes, target: Target) -> Code:
        grad = {"grad": "torch.enable_grad()", "no_grad": "torch.no_grad()",
                "inference_mode": "torch.inference_mode()"}[config.grad]
        return Code(setup=[f"model.{config.mode}()"], contexts=[grad])
