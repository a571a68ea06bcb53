"""PIT105 parameter-not-learning."""

from __future__ import annotations

import torch

from pitstop.doctor.check import Check
from pitstop.doctor.checks.common import and_more


class ParameterNotLearning(Check):
    """PIT105: optimizer parameters that never get a non-zero gradient or never change; trainable
    parameters that get gradients but are in no optimizer (the model rebuilt after its optimizer).
    Frozen parameters (requires_grad=False) are never flagged."""

    code = "PIT105"

    def __init__(self) -> None:
        self.nonzero: set[int] = set()
        self.got_grad: dict[int, int] = {}
        self.first: dict[int, tuple[list[torch.Tensor], torch.Tensor]] = {}
        self.steps: dict[int, int] = {}

    def on_grad(self, param: torch.Tensor) -> None:
        self.got_grad.setdefault(id(param), self.session.step)

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        self.steps[id(optimizer)] = self.steps.get(id(optimizer), 0) + 1
        if id(optimizer) not in self.first:
            params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
            if params:
                self.first[id(optimizer)] = (params, _norms(params))

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        self.nonzero.update(id(p) for p, n in zip(params, norms, strict=True) if n != 0.0)

    def on_finish(self) -> None:
        in_optimizer: set[int] = set()
        for opt in self.session.optimizers_alive():
            in_optimizer.update(id(p) for g in opt.param_groups for p in g["params"])
            if self.steps.get(id(opt), 0) >= 2:
                self._unlearned(opt)
        if self.session.optimizers_alive():
            self._orphans(in_optimizer)

    def _unlearned(self, opt: torch.optim.Optimizer) -> None:
        params = [p for g in opt.param_groups for p in g["params"]]
        steps, label = self.steps[id(opt)], self.session.optimizer_label(opt)
        never = [self.name_of(p) for p in params if p.requires_grad and id(p) not in self.nonzero]
        if never:
            self.found(self.code, label, f"{len(never)} parameter(s) of {label} never received a non-zero "
                       f"gradient in {steps} steps: {and_more(never)} (not used in the loss, or detached "
                       f"from it)", step=1)
        first = self.first.get(id(opt))
        if first is not None:
            same = (_norms(first[0]) == first[1]).tolist()
            frozen = [self.name_of(p) for p, s in zip(first[0], same, strict=True) if s and id(p) in self.nonzero]
            if frozen:
                self.found(self.code, f"{label} (unchanged)", f"{len(frozen)} parameter(s) got gradients but "
                           f"never changed in {steps} steps of {label}: {and_more(frozen)} (learning rate 0?)",
                           step=1)

    def _orphans(self, in_optimizer: set[int]) -> None:
        orphans = [(self.name_of(p), self.got_grad[id(p)]) for r in self.session.roots_alive()
                   for p in r.parameters() if p.requires_grad and id(p) in self.got_grad and id(p) not in in_optimizer]
        if orphans:
            names = [n for n, _ in orphans]
            self.found(self.code, names[0].split(".")[0], f"{len(names)} trainable parameter(s) received gradients "
                       f"but are in no optimizer: {and_more(names)}; was the model rebuilt (or moved with .to() "
                       f"creating new tensors) after its optimizer was created?", step=min(s for _, s in orphans))


def _norms(params: list[torch.Tensor]) -> torch.Tensor:
    with torch.no_grad():
        return torch.stack([n.float() for n in torch._foreach_norm([p.detach() for p in params])])
