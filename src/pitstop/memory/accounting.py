"""Exact activation accounting: every tensor autograd saves for backward, attributed to the
innermost module running when it was saved, deduplicated by storage; parameters and inputs are
counted apart. Forward time per module from forward pre/post hooks. The peak of a training step
from the CUDA allocator's own counters, or on CPU from exact accounting of every storage created
(a dispatch mode, with a finalizer per storage)."""

from __future__ import annotations

import statistics
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from pitstop._document import Rendered, envelope
from pitstop.engine.peak import storage_key
from pitstop.errors import UsageError

LossFn = Callable[[Any], torch.Tensor]


def default_loss(output: Any) -> torch.Tensor:
    """Sum of the means of the floating-point outputs: a scalar every output contributes to."""
    tensors = [t for t in tree_leaves(output) if isinstance(t, torch.Tensor) and t.is_floating_point()
               and t.requires_grad]
    if not tensors:
        raise UsageError("the model's output has no floating-point tensor that requires grad; pass loss_fn=")
    return sum(t.float().mean() for t in tensors)  # type: ignore[return-value]


def as_args(example_inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` from a tensor, a tuple/list of inputs, a dict of keyword inputs, or an
    ``Inputs``."""
    from pitstop.models.inputs import Inputs

    inputs = Inputs.coerce(example_inputs)
    return tuple(inputs.args), dict(inputs.kwargs)


@dataclass
class ModuleRow:
    """One module: bytes saved for backward while it was the innermost module running (and in
    its whole subtree), forward time (self and total, ms), parameters."""

    name: str
    kind: str
    depth: int
    saved_bytes: int = 0
    subtree_bytes: int = 0
    forward_ms: float = 0.0  # total, children included (median over repeats)
    self_ms: float = 0.0
    param_bytes: int = 0
    calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.name, "type": self.kind, "depth": self.depth, "saved_bytes": self.saved_bytes,
                "subtree_bytes": self.subtree_bytes, "forward_ms": self.forward_ms, "self_ms": self.self_ms,
                "param_bytes": self.param_bytes, "calls": self.calls}


@dataclass
class ActivationReport(Rendered):
    """Per-module activation bytes and forward time for one forward + backward."""

    rows: list[ModuleRow]
    total_bytes: int  # activations saved for backward, deduplicated, parameters and inputs excluded
    param_saved_bytes: int  # parameters (and buffers) autograd saved: counted apart, they exist anyway
    input_saved_bytes: int
    step_ms: float  # forward + backward, median
    peak_bytes: int | None = None
    peak_how: str = ""
    repeats: int = 0
    environment: dict[str, Any] = field(default_factory=dict)

    def row(self, name: str) -> ModuleRow:
        return next(r for r in self.rows if r.name == name)

    def to_dict(self) -> dict[str, Any]:
        return envelope("memory", self.environment,
                        activation_bytes=self.total_bytes, parameter_saved_bytes=self.param_saved_bytes,
                        input_saved_bytes=self.input_saved_bytes, step_ms=self.step_ms,
                        peak_step_bytes=self.peak_bytes, peak_how=self.peak_how, repeats=self.repeats,
                        modules=[r.to_dict() for r in self.rows])

def activation_report(model: nn.Module, example_inputs: Any, *, loss_fn: LossFn | None = None,
                      repeats: int = 5, peak: bool = True) -> ActivationReport:
    """Measure ``model`` on ``example_inputs``: one accounted forward + backward for the bytes,
    ``repeats`` timed ones (after a warm-up) for per-module forward time, and the peak of a step."""
    args, kwargs = as_args(example_inputs)
    loss_fn = loss_fn or default_loss
    names = {id(m): (n or type(model).__name__) for n, m in model.named_modules()}
    depth = {id(m): (0 if not n else n.count(".") + 1) for n, m in model.named_modules()}
    rows = {id(m): ModuleRow(names[id(m)], type(m).__name__, depth[id(m)],
                             param_bytes=sum(p.numel() * p.element_size() for p in m.parameters(recurse=False)))
            for m in model.modules()}
    excluded_params = {k[0] for t in [*model.parameters(), *model.buffers()] if (k := storage_key(t))}
    excluded_inputs = {k[0] for t in tree_leaves((args, kwargs))
                       if isinstance(t, torch.Tensor) and (k := storage_key(t))}
    stack: list[int] = []
    saved: dict[int, tuple[int, int]] = {}  # storage -> (bytes, module id)
    apart = {"param": 0, "input": 0}
    seen_apart: set[int] = set()

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = storage_key(t)
        owner = stack[-1] if stack else id(model)
        if key is None:
            saved[id(t)] = (t.numel() * t.element_size(), owner)
        elif key[0] in excluded_params or key[0] in excluded_inputs:
            if key[0] not in seen_apart:
                seen_apart.add(key[0])
                apart["param" if key[0] in excluded_params else "input"] += key[1]
        elif key[0] not in saved:
            saved[key[0]] = (key[1], owner)
        return t

    starts: dict[int, list[float]] = {}
    times: dict[int, list[float]] = {}

    def pre(mod: nn.Module, _args: Any) -> None:
        stack.append(id(mod))
        starts.setdefault(id(mod), []).append(time.perf_counter())

    def post(mod: nn.Module, _args: Any, _out: Any) -> None:
        if stack and stack[-1] == id(mod):
            stack.pop()
        t0 = starts[id(mod)].pop()
        times.setdefault(id(mod), []).append((time.perf_counter() - t0) * 1e3)

    was_training = model.training
    model.train()
    handles = [h for m in model.modules() for h in (m.register_forward_pre_hook(pre),
                                                     m.register_forward_hook(post, always_call=True))]
    try:
        _step(model, args, kwargs, loss_fn)  # warm-up (lazy init, allocator)
        model.zero_grad(set_to_none=True)
        times.clear()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            _step(model, args, kwargs, loss_fn)
        model.zero_grad(set_to_none=True)
        per_call: dict[int, list[float]] = {}
        steps = []
        for _ in range(repeats):
            times.clear()
            t0 = time.perf_counter()
            _step(model, args, kwargs, loss_fn)
            steps.append((time.perf_counter() - t0) * 1e3)
            model.zero_grad(set_to_none=True)
            for key, ts in times.items():
                per_call.setdefault(key, []).append(sum(ts))
                rows[key].calls = len(ts)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    for key, ts in per_call.items():
        rows[key].forward_ms = statistics.median(ts)
    for m in model.modules():
        child = sum(rows[id(c)].forward_ms for c in m.children())
        rows[id(m)].self_ms = max(0.0, rows[id(m)].forward_ms - child)
    for nbytes, owner in saved.values():
        rows[owner].saved_bytes += nbytes
    for m in reversed(list(model.modules())):  # children before parents
        rows[id(m)].subtree_bytes = rows[id(m)].saved_bytes + sum(rows[id(c)].subtree_bytes for c in m.children())
    report = ActivationReport([rows[id(m)] for m in model.modules()], sum(b for b, _ in saved.values()),
                              apart["param"], apart["input"], statistics.median(steps) if steps else 0.0,
                              repeats=repeats)
    if peak:
        report.peak_bytes, report.peak_how = peak_step_bytes(model, example_inputs, loss_fn=loss_fn)
    return report


def _step(model: nn.Module, args: Sequence[Any], kwargs: dict[str, Any], loss_fn: LossFn) -> None:
    loss_fn(model(*args, **kwargs)).backward()


class _LiveStorages(TorchDispatchMode):
    """Exact CPU accounting: every storage an op creates is counted until it is freed."""

    def __init__(self) -> None:
        super().__init__()
        self.live = self.peak = 0
        self.sizes: dict[int, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                s = t.untyped_storage()
                ptr = s.data_ptr()
                if ptr and ptr not in self.sizes:
                    self.sizes[ptr] = s.nbytes()
                    self.live += self.sizes[ptr]
                    self.peak = max(self.peak, self.live)
                    weakref.finalize(s, self._free, ptr)
        return out

    def _free(self, ptr: int) -> None:
        self.live -= self.sizes.pop(ptr, 0)


def peak_step_bytes(model: nn.Module, example_inputs: Any, *, loss_fn: LossFn | None = None
                    ) -> tuple[int | None, str]:
    """Peak memory of one forward + backward above what existed before it: CUDA's allocator peak
    (``max_memory_allocated``), or on CPU every storage created during the step, counted exactly
    until freed (gradients included)."""
    args, kwargs = as_args(example_inputs)
    loss_fn = loss_fn or default_loss
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    model.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        _step(model, args, kwargs, loss_fn)
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - base
        model.zero_grad(set_to_none=True)
        return peak, "CUDA allocator peak"
    mode = _LiveStorages()
    with mode:
        _step(model, args, kwargs, loss_fn)
    model.zero_grad(set_to_none=True)
    return mode.peak, "exact accounting of CPU storages"
