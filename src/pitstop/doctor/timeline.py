"""Losses and gradient norms: read from the device without stalling it, kept as the timeline
the report draws, and handed to the checks as ``on_loss`` / ``on_grad_norms`` / ``on_sync``.

Cheap by default: values stay on the device and are read every ``sync_every`` steps (1 on CPU,
where reading costs nothing; 50 once they live on a GPU, unless given). ``guard`` reads the
gradient norms every step and drops the gradients of a step whose norms are not finite, so
the optimizer skips it (a step given a closure computes its gradients inside ``step()`` and
cannot be skipped, only reported)."""

from __future__ import annotations

import math
import weakref
from typing import Any

import torch

from pitstop.hooks.session import Consumer, Session

LAYERS = 256  # per-parameter series kept (the first seen)


class Timeline:
    """(step, value) pairs of the loss, the total gradient norm and each parameter's norm;
    None where a value was not finite."""

    def __init__(self) -> None:
        self.loss: list[tuple[int, float | None]] = []
        self.grad_norm: list[tuple[int, float | None]] = []
        self.layers: dict[str, list[tuple[int, float | None]]] = {}

    def add_loss(self, step: int, value: float) -> None:
        self.loss.append((step, value if math.isfinite(value) else None))

    def add_norms(self, step: int, names: list[str], values: list[float]) -> None:
        finite = all(math.isfinite(v) for v in values)
        self.grad_norm.append((step, math.sqrt(sum(v * v for v in values)) if finite else None))
        for name, v in zip(names, values, strict=True):
            if name in self.layers or len(self.layers) < LAYERS:
                self.layers.setdefault(name, []).append((step, v if math.isfinite(v) else None))

    def as_dict(self) -> dict[str, Any]:
        return {"loss": self.loss, "grad_norm": self.grad_norm, "layers": self.layers}


class Readings(Consumer):
    """Losses at backward and gradient norms at each optimizer step, read every ``sync_every``
    steps; publishes ``on_loss(step, value, site)``, ``on_grad_norms(step, optimizer, params,
    norms)``, ``on_skipped(step)`` (guard) and ``on_sync()`` through the session."""

    def __init__(self, session: Session, timeline: Timeline, *, guard: bool = False,
                 sync_every: int | None = None) -> None:
        if sync_every is not None and sync_every < 1:
            raise ValueError(f"sync_every: expected a positive number of steps, got {sync_every}")
        self.session, self.timeline, self.guard = session, timeline, guard
        self.sync_given = sync_every
        self.sync_every = sync_every or 1  # becomes 50 (unless given) once values live on a GPU
        self.skipped_steps: list[int] = []
        self._losses: list[tuple[int, torch.Tensor, str]] = []
        self._norms: list[tuple[int, Any, list[torch.Tensor], torch.Tensor]] = []

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool,
                    site: str) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None and t.numel() == 1 and t.is_floating_point():
                self._losses.append((self.session.step, t.detach().reshape(()), site))
        if self.sync_given is None and any(t.is_cuda for _, t, _ in self._losses):
            self.sync_every = 50
        if self.sync_every == 1 or self.guard:
            self._flush_losses()

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if not params:
            return
        grads = [p.grad.detach() for p in params if p.grad is not None]
        norms = torch.stack([n.float() for n in torch._foreach_norm(grads)])
        step = self.session.step
        if self.guard and not bool(torch.isfinite(norms).all()):
            for p in params:
                p.grad = None  # the optimizer skips parameters without a gradient: weights stay clean
            self.skipped_steps.append(step)
            self.session.emit("on_skipped", step)
        if self.sync_given is None and norms.is_cuda:
            self.sync_every = 50
        self._norms.append((step, weakref.ref(optimizer), params, norms))
        if self.guard or step % self.sync_every == 0:
            self.flush()

    def _flush_losses(self) -> None:
        if not self._losses:
            return
        pending, self._losses = self._losses, []
        values = torch.stack([t.float().cpu() for _, t, _ in pending]).tolist()
        for (step, _, site), value in zip(pending, values, strict=True):
            self.timeline.add_loss(step, value)
            self.session.emit("on_loss", step, value, site)

    def flush(self) -> None:
        """Read what is pending on the device (one transfer per step) and publish it."""
        self._flush_losses()
        pending, self._norms = self._norms, []
        for step, opt_ref, params, norms in pending:
            optimizer = opt_ref()
            if optimizer is not None:
                values = norms.cpu().tolist()
                self.timeline.add_norms(step, [self.session.name_of(p) for p in params], values)
                self.session.emit("on_grad_norms", step, optimizer, params, values)
        self.session.emit("on_sync")
