"""PIT110 non-scalar-backward."""

from __future__ import annotations

from typing import Any

import torch

from pitstop.doctor.check import Check


class NonScalarBackward(Check):
    """PIT110: backward() on a non-scalar tensor without gradient=."""

    code = "PIT110"

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        for t, g in zip(tensors, gradients, strict=False):
            if isinstance(t, torch.Tensor) and g is None and t.numel() != 1:
                self.found(self.code, site or "backward", f"backward() on a tensor of shape {tuple(t.shape)} "
                           f"without gradient=: reduce it first (a loss with reduction='none'?)")
