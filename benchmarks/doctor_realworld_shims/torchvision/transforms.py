"""The transforms the examples use, on tensors: images are uint8 (H, W) or (H, W, C)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch


class Compose:
    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    """uint8 (H, W[, C]) -> float (C, H, W) in [0, 1]."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.uint8:
            return x
        x = x.unsqueeze(-1) if x.dim() == 2 else x
        return x.permute(2, 0, 1).float().div(255)


class Normalize:
    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        self.mean, self.std = torch.tensor(mean)[:, None, None], torch.tensor(std)[:, None, None]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class Lambda:
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, x: Any) -> Any:
        return self.fn(x)
