"""Sentinels on graph nodes: an object held by a node's prehook lives exactly as long as the
node, so weak references to sentinels tell which graphs are still alive and whether a later
backward ran through them, without scanning memory."""

from __future__ import annotations

from typing import Any

import torch

from pitstop.hooks.steps import CURRENT


class Sentinel:
    """Held by a graph node's prehook; records the steps in which a backward ran through it."""

    __slots__ = ("__weakref__", "group", "kind", "site", "step", "used")

    def __init__(self, kind: str, step: int, site: str) -> None:
        self.kind, self.step, self.site = kind, step, site
        self.used: list[int] = []  # steps whose backward executed the node
        self.group: Any = None  # told when used

    def __call__(self, grad_outputs: Any) -> None:
        step = CURRENT[0]
        if not self.used or self.used[-1] != step:
            self.used.append(step)
        if self.group is not None:
            self.group.used = True


def track(tensor: torch.Tensor, kind: str, site: str, step: int) -> Sentinel | None:
    """A sentinel on ``tensor``'s graph node (None without one)."""
    node = tensor.grad_fn
    if node is None:
        return None
    sentinel = Sentinel(kind, step, site)
    node.register_prehook(sentinel)
    return sentinel
