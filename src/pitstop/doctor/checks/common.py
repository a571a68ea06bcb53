"""Helpers the checks share."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

MODE_DEPENDENT = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd, nn.modules.instancenorm._InstanceNorm)


def tensors(output: Any, limit: int = 8) -> list[torch.Tensor]:
    """The tensors in a module output (tensor, tuple/list, dict, HF ModelOutput), at most ``limit``."""
    found: list[torch.Tensor] = []
    stack = [output]
    while stack and len(found) < limit:
        obj = stack.pop()
        if isinstance(obj, torch.Tensor):
            found.append(obj)
        elif isinstance(obj, dict):
            stack.extend(reversed(list(obj.values())))
        elif isinstance(obj, (list, tuple)):
            stack.extend(reversed(obj))
    return found


def and_more(names: list[str], shown: int = 3) -> str:
    """```a`, `b`, `c` and 2 more``."""
    head = ", ".join(f"`{n}`" for n in names[:shown])
    return head + (f" and {len(names) - shown} more" if len(names) > shown else "")


def mode_dependent(module: nn.Module) -> bool:
    """Whether ``module`` holds dropout / batch-norm / instance-norm (train and eval differ)."""
    return any(isinstance(m, MODE_DEPENDENT) for m in module.modules())
