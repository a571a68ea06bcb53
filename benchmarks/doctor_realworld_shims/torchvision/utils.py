"""save_image writes the tensor with torch.save (no image library here)."""

from __future__ import annotations

from typing import Any

import torch


def save_image(tensor: torch.Tensor, fp: str, **kwargs: Any) -> None:
    torch.save(tensor.detach().cpu(), fp)
