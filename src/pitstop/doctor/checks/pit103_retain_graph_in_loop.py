"""PIT103 retain-graph-in-loop (the retain_graph=True half; the growing graph is in pit102)."""

from __future__ import annotations

from typing import Any

import torch

from pitstop.doctor.check import Check
from pitstop.doctor.sentinels import Sentinel


class RetainGraph(Check):
    """PIT103: ``backward(retain_graph=True)`` although no later backward runs over that graph.

    After a retaining backward, a marker prehook goes on every node of its graph (parameters'
    AccumulateGrad nodes excepted: every graph shares those). If that call site runs again and
    no backward has touched the previous graph, the retention was for nothing; twice in a row is
    a finding."""

    code = "PIT103"
    CAP = 20_000  # nodes marked per graph

    def __init__(self) -> None:
        self.marks: dict[str, list[Any]] = {}  # site -> [marker] of the last retained graph
        self.wasted: dict[str, int] = {}

    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None:
        if not retain_graph:
            return
        previous = self.marks.get(site)
        if previous is not None:
            self.wasted[site] = 0 if previous[0].used else self.wasted.get(site, 0) + 1
            if self.wasted[site] >= 2:
                self.found(self.code, site, f"backward(retain_graph=True) at `{site}` keeps each step's graph, but "
                           f"no second backward runs over it: the saved activations are held for nothing")
        marker = Sentinel("retained", self.session.step, site)
        seen: set[int] = set()
        stack: list[Any] = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while stack and len(seen) < self.CAP:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if type(node).__name__ != "AccumulateGrad":
                node.register_prehook(marker)
            stack.extend(n for n, _ in node.next_functions)
        self.marks[site] = [marker]
