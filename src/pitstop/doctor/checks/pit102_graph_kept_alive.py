"""PIT102 graph-kept-alive, with the growing-graph half of PIT103 and PIT201 inference-with-grad:
all three read the same sentinels on graph nodes."""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn

from pitstop.doctor.check import Check
from pitstop.doctor.checks.common import tensors
from pitstop.doctor.sentinels import Sentinel, track


class GraphTracker(Check):
    """PIT102 (graph kept alive), the growing-graph half of PIT103, and PIT201 (forward graphs
    no backward used), from sentinels on graph nodes.

    Every loss that backward runs on and every grad-recording root forward output gets a
    sentinel. At the end of each iteration: sentinels of two or more earlier steps still alive
    mean graph-attached tensors are kept across steps (PIT102), unless a later backward ran
    through them, which means the graph grows step after step (PIT103). A forward output's
    sentinel that dies, or is old, without any backward having run through it is a forward
    recorded for nothing (PIT201)."""

    code = "PIT102"
    codes = ("PIT102", "PIT103", "PIT201")
    KEEP = 2  # sentinels alive from this many earlier steps (or more) = kept alive

    def __init__(self) -> None:
        self.alive: list[weakref.ref[Sentinel]] = []
        self.unused: dict[str, list[int]] = {}  # root name -> steps of forwards no backward used
        self.groups: set[Group] = set()  # forwards whose graphs are alive
        self.modes: dict[str, str] = {}

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                self._keep(track(t, "loss", site, self.session.step))

    def on_root_forward(self, module: nn.Module, output: Any, grad_enabled: bool) -> None:
        if not grad_enabled:
            return
        name = self.name_of(module)
        self.modes[name] = "train" if module.training else "eval"
        tracked = [t for t in tensors(output) if t.grad_fn is not None]
        if not tracked:
            return
        group = Group(self, name, self.session.step)
        for t in tracked:
            sentinel = track(t, "output", name, self.session.step)
            if sentinel is not None:
                group.add(sentinel)
                self._keep(sentinel)

    def _keep(self, sentinel: Sentinel | None) -> None:
        if sentinel is not None:
            self.alive.append(weakref.ref(sentinel))

    def on_iteration(self, step: int) -> None:
        self.alive = [r for r in self.alive if r() is not None]
        old = [s for s in (r() for r in self.alive) if s is not None and s.step <= step - 1]
        reused = [s for s in old if any(u > s.step for u in s.used)]
        if len({s.step for s in reused}) >= self.KEEP:
            self.found("PIT103", reused[0].site or "backward",
                       f"the graph keeps growing: backward at step {step} ran through graphs built "
                       f"{step - min(s.step for s in reused)} steps earlier (state carried across steps "
                       f"without .detach(), e.g. an RNN hidden state)", step=step)
            return
        kept = [s for s in old if s not in reused and (s.kind == "loss" or s.used)]  # unused outputs: PIT201
        if len({s.step for s in kept}) >= self.KEEP:
            site = kept[-1].site
            self.found(self.code, site or "loss",
                       f"graphs of {len({s.step for s in kept})} earlier steps are still alive at step {step} "
                       f"(the {kept[-1].kind} of `{site}` is kept: a list, a running total or an attribute "
                       f"holds it with its graph); memory grows every step", step=step)

    def forward_unused(self, name: str, step: int) -> None:
        self.unused.setdefault(name, []).append(step)

    def on_finish(self) -> None:
        for group in list(self.groups):
            if not group.used:
                self.forward_unused(group.name, group.step)
        self.groups.clear()
        for name, steps in self.unused.items():
            mode = self.modes.get(name, "train")
            extra = "" if mode == "eval" else " (in train mode)"
            self.found("PIT201", name, f"{len(steps)} forward pass(es) of `{name}`{extra} recorded autograd "
                       f"graphs that no backward used", step=steps[0])
            self.findings.set_count("PIT201", name, len(steps))


class Group:
    """The sentinels of one forward's outputs: used once a backward runs through any of them;
    reported unused when all of them die without that (or at the end)."""

    def __init__(self, tracker: GraphTracker, name: str, step: int) -> None:
        self.tracker, self.name, self.step = tracker, name, step
        self.refs: list[weakref.ref[Sentinel]] = []
        self.used = False
        tracker.groups.add(self)

    def add(self, sentinel: Sentinel) -> None:
        sentinel.group = self
        self.refs.append(weakref.ref(sentinel, self._died))

    def _died(self, ref: weakref.ref[Sentinel]) -> None:
        if self in self.tracker.groups and all(r() is None for r in self.refs):
            self.tracker.groups.discard(self)
            if not self.used:
                self.tracker.forward_unused(self.name, self.step)
