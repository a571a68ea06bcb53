"""PIT101 stale-gradients."""

from __future__ import annotations

import weakref

import torch
from torch import nn

from pitstop.doctor.check import Check
from pitstop.doctor.checks.common import and_more

_LOOK = 64  # elements of a gradient looked at to tell it was zeroed in place (all zero: cleared)


def _distributed() -> bool:
    """A process group of several ranks: DDP's reducer (FSDP's too) writes ``.grad`` in place."""
    dist = torch.distributed
    return bool(dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1)


class StaleGradients(Check):
    """PIT101: an optimizer step applies gradients that still hold the previous step's values.

    After each step its gradient tensors are remembered (weakly), with their version counters.
    A gradient was cleared when it is a new tensor at the next step (``zero_grad()`` sets None, or
    ``p.grad = None``), when a ``zero_grad()`` of its optimizer or of a module holding it ran since
    (seen as it happens), or, in one process, when it changed in place beyond the counted
    accumulations (a hand-written ``p.grad.zero_()``). Under a process group of several ranks the
    reducer writes the all-reduced gradient in place at every backward, so version counters say
    nothing there: a gradient that no ``zero_grad()`` covered is looked at when the first backward
    after the step begins, and it was cleared by hand only if its first elements are all zero. Several
    backwards per step with zero_grad after the step (intentional accumulation), and a GAN whose
    generator backward passes through the discriminator before its zero_grad, are not this."""

    code = "PIT101"

    def __init__(self) -> None:
        self.left: dict[int, tuple[weakref.ref[torch.Tensor], weakref.ref[torch.Tensor], int]] = {}
        self.accumulated: dict[int, int] = {}
        self.cleared: set[int] = set()  # parameters a zero_grad() covered since their step
        self.held: set[int] | None = None  # distributed: those still holding values at the backwards

    def on_step_done(self, optimizer: torch.optim.Optimizer) -> None:
        for group in optimizer.param_groups:
            for p in group["params"]:
                self.cleared.discard(id(p))
                if p.grad is not None:
                    self.left[id(p)] = (weakref.ref(p), weakref.ref(p.grad), p.grad._version)
                    self.accumulated[id(p)] = 0
        self.held = None

    def on_zero_grad(self, owner: torch.optim.Optimizer | nn.Module) -> None:
        params = owner.parameters() if isinstance(owner, nn.Module) else \
            (p for group in owner.param_groups for p in group["params"])
        self.cleared.update(id(p) for p in params if id(p) in self.left)

    def on_grad(self, param: torch.Tensor) -> None:
        if id(param) in self.accumulated:
            self.accumulated[id(param)] += 1

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[object], retain_graph: bool,
                    site: str) -> None:
        """Distributed: at the first backward after a step, the gradients no zero_grad() covered
        that still hold values; at each later one before the step, those of them zeroed by hand since
        (a GAN's generator cleared after the discriminator's backward) leave the set."""
        if not self.left or (self.held is not None and not self.held) or not _distributed():
            return
        looked: list[tuple[int, torch.Tensor]] = []
        for pid, (param_ref, grad_ref, _) in self.left.items():
            param, grad = param_ref(), grad_ref()
            if pid in self.cleared or param is None or grad is None or param.grad is not grad \
                    or (self.held is not None and pid not in self.held):
                continue
            local = grad.to_local() if hasattr(grad, "to_local") else grad  # a DTensor's shard: no collective
            looked.append((pid, local.detach().reshape(-1)[:_LOOK].ne(0).any()))
        try:
            nonzero = torch.stack([x for _, x in looked]).tolist() if looked else []  # one read of the device
        except RuntimeError:  # gradients on several devices
            nonzero = [bool(x) for _, x in looked]
        self.held = {pid for (pid, _), held in zip(looked, nonzero, strict=True) if held}

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        distributed = _distributed()
        stale = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                entry = self.left.pop(id(p), None)
                added = self.accumulated.pop(id(p), 0)
                grad = p.grad
                if entry is None or grad is None or entry[1]() is not grad or id(p) in self.cleared:
                    continue
                if distributed:
                    is_stale = self.held is not None and id(p) in self.held
                else:
                    is_stale = grad is not None and grad._version - entry[2] == added
                if is_stale:
                    stale.append(self.name_of(p))
        if stale:
            where = " on this rank" if distributed else ""
            self.found(self.code, self.session.optimizer_label(optimizer),
                       f"gradients of {and_more(stale)} still held the previous step's values at this "
                       f"step{where}: no zero_grad() between two optimizer steps, so old gradients are applied again")
