"""Budget-driven gradient checkpointing: measure every candidate block, choose greedily by bytes
saved per millisecond of recompute until the budget is met, wrap the chosen blocks in place with
``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``, measure, give back the
lowest-scoring blocks while the measured budget still holds, and time the result.

A checkpointed block keeps its class, parameters, names and state_dict keys, and stays
checkpointed, running its own parameters, through deepcopy, pickle, load_state_dict,
torch.compile and DDP: its instance ``forward`` is a ``CheckpointedForward`` object holding the
block (``uncheckpoint`` removes it)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint as _checkpoint

from pitstop._format import fmt_bytes as mib
from pitstop.errors import UsageError
from pitstop.memory.accounting import ActivationReport, LossFn, _step, activation_report, as_args, default_loss
from pitstop.stats import Ratio, speedup

_LAST_RESORT = (nn.Embedding, nn.EmbeddingBag)


@dataclass
class Candidate:
    name: str
    saved_bytes: int  # activations saved in its subtree
    recompute_ms: float  # its forward time
    last_resort: bool = False  # embeddings and output projections: only when nothing else suffices

    @property
    def score(self) -> float:
        return self.saved_bytes / max(self.recompute_ms, 1e-3)


@dataclass
class CheckpointPlan:
    """What was chosen and what it did, measured: activation bytes and step time before/after."""

    budget_bytes: int
    chosen: list[str]
    candidates: list[Candidate]
    before_bytes: int
    after_bytes: int
    before_ms: float
    after_ms: float
    slowdown: Ratio | None  # step time after / before, with its interval
    met: bool
    note: str = ""
    before: ActivationReport | None = field(default=None, repr=False)

    @property
    def saved_share(self) -> float:
        return 1 - self.after_bytes / self.before_bytes if self.before_bytes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"budget_bytes": self.budget_bytes, "chosen": self.chosen, "met": self.met, "note": self.note,
                "activation_bytes": {"before": self.before_bytes, "after": self.after_bytes},
                "step_ms": {"before": self.before_ms, "after": self.after_ms},
                "slowdown": None if self.slowdown is None else
                {"median": self.slowdown.median, "ci95": list(self.slowdown.ci95)},
                "candidates": [{"module": c.name, "saved_bytes": c.saved_bytes, "recompute_ms": c.recompute_ms,
                                "last_resort": c.last_resort} for c in self.candidates]}

    def __str__(self) -> str:
        slow = "" if self.slowdown is None else \
            f" ({self.slowdown.median:.2f}x [{self.slowdown.ci95[0]:.2f}-{self.slowdown.ci95[1]:.2f}])"
        lines = [f"checkpointed {len(self.chosen)} block(s): {', '.join(self.chosen) or 'none'}",
                 f"activations saved for backward: {mib(self.before_bytes)} -> {mib(self.after_bytes)} "
                 f"(-{self.saved_share:.0%}; budget {mib(self.budget_bytes)}: {'met' if self.met else 'NOT met'})",
                 f"forward+backward: {self.before_ms:.1f} ms -> {self.after_ms:.1f} ms{slow}"]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


def candidates(model: nn.Module, report: ActivationReport, names: list[str] | None = None) -> list[Candidate]:
    """Blocks worth checkpointing: the members of ``nn.ModuleList``/``nn.Sequential`` containers
    that have submodules of their own (transformer layers, residual blocks), or ``names``; top-level
    embeddings and output projections as last resorts."""
    modules = dict(model.named_modules())
    if names is not None:
        missing = [n for n in names if n not in modules or not n]
        if missing:
            raise UsageError(f"candidates: no submodule named {', '.join(map(repr, missing))}; names are "
                             f"model.named_modules() keys such as {', '.join(list(modules)[1:4])}")
        chosen = list(names)
        last = []
    else:
        chosen = []
        for name, m in modules.items():
            if isinstance(m, (nn.ModuleList, nn.Sequential)) and name:
                chosen += [f"{name}.{c}" for c, sub in m.named_children() if any(True for _ in sub.children())]
            elif isinstance(m, (nn.ModuleList, nn.Sequential)):
                chosen += [c for c, sub in m.named_children() if any(True for _ in sub.children())]
        chosen = [n for n in chosen if not any(n.startswith(o + ".") for o in chosen if o != n)]  # outermost
        last = [n for n, m in model.named_children() if isinstance(m, (*_LAST_RESORT, nn.Linear))]
    out = []
    for name in [*chosen, *last]:
        row = report.row(name)
        out.append(Candidate(name, row.subtree_bytes, row.forward_ms, name in last))
    return out


def checkpoint(model: nn.Module, example_inputs: Any, budget: float | int = 0.5, *,
               candidates_: list[str] | None = None, loss_fn: LossFn | None = None, repeats: int = 7,
               **kwargs: Any) -> CheckpointPlan:
    """Checkpoint blocks of ``model`` in place until its activation memory meets ``budget``: a
    fraction (0.5 = half of what it saves now) or a number of bytes. Returns the measured plan.
    ``candidates=[...]`` names the blocks to choose from."""
    names = kwargs.pop("candidates", candidates_)
    if kwargs:
        raise TypeError(f"checkpoint() got unexpected arguments {', '.join(kwargs)}")
    loss_fn = loss_fn or default_loss
    before = activation_report(model, example_inputs, loss_fn=loss_fn, repeats=3, peak=False)
    if isinstance(budget, float) and 0 < budget <= 1:
        target = int(before.total_bytes * budget)
    elif isinstance(budget, int) and budget > 0:
        target = budget
    else:
        raise UsageError(f"budget must be a fraction in (0, 1] or a positive number of bytes, got {budget!r}")
    pool = candidates(model, before, names)
    if not pool:
        raise UsageError("no candidate blocks found (no ModuleList/Sequential of blocks); pass candidates=[...]")
    modules = dict(model.named_modules())
    chosen: list[str] = []
    estimate = before.total_bytes
    for c in sorted((c for c in pool if not c.last_resort), key=lambda c: -c.score) + \
            sorted((c for c in pool if c.last_resort), key=lambda c: -c.score):
        if estimate <= target:
            break
        if any(c.name.startswith(o + ".") or o.startswith(c.name + ".") for o in chosen):
            continue
        chosen.append(c.name)
        estimate -= c.saved_bytes
    for name in chosen:
        wrap(modules[name])

    def measured() -> ActivationReport:
        return activation_report(model, example_inputs, loss_fn=loss_fn, repeats=1, peak=False)

    after = measured()
    while len(chosen) > 1 and after.total_bytes <= target:  # the estimate over-counts: give back blocks
        last = chosen[-1]  # the lowest score chosen
        unwrap(modules[last])
        trial = measured()
        if trial.total_bytes > target:
            wrap(modules[last])
            break
        chosen.pop()
        after = trial
    note = ""
    if after.total_bytes > target:
        note = (f"the budget cannot be met by checkpointing these candidates: {mib(after.total_bytes)} remain "
                f"(block inputs stay saved, and what runs outside the blocks is not checkpointed)")
    before_ms, after_ms, ratio = _interleaved_times(model, example_inputs, loss_fn, chosen, repeats)
    return CheckpointPlan(target, chosen, pool, before.total_bytes, after.total_bytes, before_ms, after_ms, ratio,
                          after.total_bytes <= target, note, before)


def wrap(module: nn.Module) -> None:
    """Checkpoint ``module`` in place: its instance ``forward`` becomes a ``CheckpointedForward``
    (class, parameters, names and state_dict keys unchanged)."""
    if not checkpointed(module):
        module.forward = CheckpointedForward(module)


def unwrap(module: nn.Module) -> None:
    """Undo ``wrap`` for one module: it calls its class's forward again."""
    if checkpointed(module):
        del module.forward


def checkpointed(module: nn.Module) -> bool:
    """Whether ``wrap`` checkpointed ``module``."""
    return isinstance(vars(module).get("forward"), CheckpointedForward)


class CheckpointedForward:
    """A block's class forward under ``torch.utils.checkpoint.checkpoint(use_reentrant=False)``.

    An object holding its module, not a closure: ``copy.deepcopy`` maps ``self.module`` to the
    copy (a closure kept calling the ORIGINAL block, whose parameters then got the copy's
    gradients), pickle and ``torch.save`` store it by reference, and ``torch.compile`` traces the
    ``checkpoint`` call it knows. PyTorch's composable ``checkpoint(module)`` was measured against
    this: its closure hooks cannot be pickled and its recomputation fails under ``torch.compile``."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = type(self.module).forward.__get__(self.module)
        if not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        return _checkpoint(forward, *args, use_reentrant=False, **kwargs)


def uncheckpoint(model: nn.Module) -> None:
    """Undo ``checkpoint``: no block is checkpointed any more."""
    for m in model.modules():
        unwrap(m)


def _interleaved_times(model: nn.Module, example_inputs: Any, loss_fn: LossFn, chosen: list[str], repeats: int
                       ) -> tuple[float, float, Ratio | None]:
    """Step time without and with the chosen checkpointing, alternating, ``repeats`` rounds of 3
    steps each; the ratio after/before with a bootstrap interval."""
    args, kwargs = as_args(example_inputs)
    modules = dict(model.named_modules())
    plain: list[float] = []
    ckpt: list[float] = []
    for r in range(repeats):
        for with_ckpt in ((False, True) if r % 2 == 0 else (True, False)):
            for name in chosen:
                m = modules[name]
                if with_ckpt:
                    wrap(m)
                else:
                    unwrap(m)
            _step(model, args, kwargs, loss_fn)  # settle
            model.zero_grad(set_to_none=True)
            for _ in range(3):
                t0 = time.perf_counter()
                _step(model, args, kwargs, loss_fn)
                (ckpt if with_ckpt else plain).append((time.perf_counter() - t0) * 1e3)
                model.zero_grad(set_to_none=True)
    for name in chosen:
        wrap(modules[name])  # leave the model checkpointed
    if not plain or not ckpt:
        return 0.0, 0.0, None
    ratio = speedup(ckpt, plain)  # > 1: checkpointed steps take longer
    plain.sort()
    ckpt.sort()
    return plain[len(plain) // 2], ckpt[len(ckpt) // 2], ratio
