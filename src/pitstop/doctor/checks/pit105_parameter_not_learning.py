"""PIT105 parameter-not-learning."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import torch

from pitstop.doctor.check import Check
from pitstop.doctor.checks.common import and_more


@dataclass
class Watched:
    """What PIT105 keeps of one optimizer: names and ids, never the optimizer or its parameters
    (a script's ``main()`` drops its model before the run ends; the verdict needs none of it)."""

    label: str  # as named at its first step (renamed at the end while it is alive: ``Adam#1``)
    optimizer: weakref.ref[torch.optim.Optimizer] | None = None
    steps: int = 0
    names: dict[int, str] = field(default_factory=dict)  # trainable parameter id -> name
    params: list[weakref.ref[torch.Tensor]] = field(default_factory=list)  # not yet seen changing
    first: list[tuple[float, float]] = field(default_factory=list)  # their fingerprints before the first update
    changed: set[int] = field(default_factory=set)
    compared: set[int] = field(default_factory=set)  # compared exactly at least once while alive
    snapshots: dict[int, torch.Tensor] = field(default_factory=dict)  # a suspect's values (CPU copy)
    size: int = 0  # parameters in its groups when last recorded
    checked_at: int = 0  # steps when the values were last compared


class ParameterNotLearning(Check):
    """PIT105: optimizer parameters that never get a non-zero gradient or never change; trainable
    parameters that get gradients but are in no optimizer (the model rebuilt after its optimizer).
    Frozen parameters (requires_grad=False) are never flagged.

    Values are compared with their fingerprint taken before the first update (norm and sum, both
    accumulated in float64) at sync points, less often as the run goes on (after 2, 4, 8, ...
    steps) and only for parameters not yet seen changing: usually every parameter has changed at
    the first comparison and nothing more is read. A float32 norm proves nothing (an embedding
    whose rows are updated sparsely keeps its float32 norm to 8 digits); float64 sums see one
    element move. A suspect whose fingerprint did not move is copied once and later compared
    element by element (``torch.equal``), and only a parameter whose every element stayed is
    "never changed"."""

    code = "PIT105"

    def __init__(self) -> None:
        self.nonzero: set[int] = set()
        self.got_grad: dict[int, int] = {}
        self.watched: dict[int, Watched] = {}  # optimizer id -> what is kept of it
        self.in_optimizer: set[int] = set()

    def on_grad(self, param: torch.Tensor) -> None:
        self.got_grad.setdefault(id(param), self.session.step)

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        w = self.watched.get(id(optimizer))
        if w is None:
            w = self.watched[id(optimizer)] = Watched(self.session.optimizer_label(optimizer), weakref.ref(optimizer))
        size = sum(len(g["params"]) for g in optimizer.param_groups)
        if size != w.size:  # the first step, or add_param_group since
            w.size = size
            self._record(w, optimizer)
        w.steps += 1

    def _record(self, w: Watched, optimizer: torch.optim.Optimizer) -> None:
        params = [p for g in optimizer.param_groups for p in g["params"]]
        self.in_optimizer.update(id(p) for p in params)
        new = [p for p in params if p.requires_grad and id(p) not in w.names]
        w.names.update((id(p), self.name_of(p)) for p in new)
        if new:
            w.params += [weakref.ref(p) for p in new]
            w.first += _fingerprints(new)

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        self.nonzero.update(id(p) for p, n in zip(params, norms, strict=True) if n != 0.0)

    def on_sync(self) -> None:
        for w in self.watched.values():
            if w.params and w.steps >= 2 and w.steps >= 2 * w.checked_at:
                self._compare(w)

    def _compare(self, w: Watched) -> None:
        """Mark the watched parameters whose values moved since the first step."""
        w.checked_at = w.steps
        alive = [(i, p) for i, p in enumerate(r() for r in w.params) if p is not None]
        if alive:
            now = _fingerprints([p for _, p in alive])
            w.changed.update(id(p) for (i, p), v in zip(alive, now, strict=True) if v != w.first[i])
            for _, p in alive:
                if id(p) not in w.changed:
                    self._exactly(w, p)
        keep = [i for i, p in alive if id(p) not in w.changed]
        w.params, w.first = [w.params[i] for i in keep], [w.first[i] for i in keep]
        w.snapshots = {k: v for k, v in w.snapshots.items() if k not in w.changed}

    def _exactly(self, w: Watched, p: torch.Tensor) -> None:
        """A suspect (its norm did not move): compared with its copy element by element, or copied now."""
        with torch.no_grad():
            values = p.detach().to("cpu", copy=True)
        before = w.snapshots.get(id(p))
        if before is None:
            w.snapshots[id(p)] = values
            return
        w.compared.add(id(p))
        if not torch.equal(values, before):
            w.changed.add(id(p))

    def on_finish(self) -> None:
        for w in self.watched.values():
            if w.params and w.steps >= 2:
                self._compare(w)
            if w.steps >= 2:
                self._unlearned(w)
        if self.watched:
            self._orphans()

    def _unlearned(self, w: Watched) -> None:
        alive = w.optimizer() if w.optimizer is not None else None
        if alive is not None:
            w.label = self.session.optimizer_label(alive)
        never = [name for i, name in w.names.items() if i not in self.nonzero]
        if never:
            self.found(self.code, w.label, f"{len(never)} parameter(s) of {w.label} never received a non-zero "
                       f"gradient in {w.steps} steps: {and_more(never)} (not used in the loss, or detached "
                       f"from it)", step=1)
        frozen = [name for i, name in w.names.items() if i in self.nonzero and i in w.compared
                  and i not in w.changed]
        if frozen:
            self.found(self.code, f"{w.label} (unchanged)", f"{len(frozen)} parameter(s) got gradients but "
                       f"never changed in {w.steps} steps of {w.label}: {and_more(frozen)} (learning rate 0?)",
                       step=1)

    def _orphans(self) -> None:
        names = self.session.param_names
        orphans = [(names[i], step) for i, step in self.got_grad.items() if i in names and i not in self.in_optimizer]
        if orphans:
            listed = [n for n, _ in orphans]
            self.found(self.code, listed[0].split(".")[0], f"{len(listed)} trainable parameter(s) received gradients "
                       f"but are in no optimizer: {and_more(listed)}; was the model rebuilt (or moved with .to() "
                       f"creating new tensors) after its optimizer was created?", step=min(s for _, s in orphans))


def _fingerprints(params: list[torch.Tensor]) -> list[tuple[float, float]]:
    """Each parameter's norm and sum, accumulated in float64 (one read for all of them)."""
    with torch.no_grad():
        rows = [torch.stack([torch.linalg.vector_norm(p.detach(), dtype=torch.float64),
                             p.detach().sum(dtype=torch.float64)]) for p in params]
        return [(a, b) for a, b in torch.stack(rows).cpu().tolist()]
