"""Fidelity: how far a variant's outputs are from the fp32 eval reference.

Outputs may be nested (tuples, lists, dicts, dataclasses, HF-style output objects); leaves are
compared in order. Fidelity is measured on more samples than the timing batch (``batches``:
``fidelity_samples`` rows in batches shaped like the timing batch, drawn from the input spec or the
user's own ``fidelity_inputs``): eight samples cannot measure a 99% agreement rate. An argmax
flip counts against the variant only where the reference's top-2 margin exceeds the variant's
error scale (``ERROR_SCALE`` x the RMS of its logit error): a flip between near-tied logits says
little. The raw and the margin-aware agreement are both reported; the gate reads the second.
A user's own metric (``load_metric``: ``file.py:fn`` or ``package.module:fn``) scores each
candidate on the user's data instead."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from pitstop.errors import SettingError
from pitstop.models.inputs import Inputs, InputSpec

FIDELITY_FILE = "fidelity.pt"  # the further fidelity batches, written beside a group's payload
ERROR_SCALE = 2 * math.sqrt(2)  # two standard deviations of the difference of two logits' errors


def flatten(output: Any) -> list[torch.Tensor]:
    """Tensor leaves of a (nested) model output, in a stable order; other leaves are ignored."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, Mapping):  # dicts and HF ModelOutput (an OrderedDict)
        return [t for v in output.values() for t in flatten(v)]
    if isinstance(output, tuple | list):
        return [t for v in output for t in flatten(v)]
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        return [t for f in dataclasses.fields(output) for t in flatten(getattr(output, f.name))]
    return []


def detached(output: Any) -> list[torch.Tensor]:
    """Flattened leaves, detached and cloned (safe to keep across calls)."""
    with torch.no_grad():
        return [t.detach().clone() for t in flatten(output)]


def is_logits(output: Any) -> bool:
    """Whether the first output is class scores: a field named ``logits`` in a mapping output
    (HF ``ModelOutput``), else a floating tensor of rank >= 2 with >= 2 entries in its last dim.
    A mapping whose first field is something else (``last_hidden_state``) is not logits."""
    if isinstance(output, Mapping):
        return next(iter(output), None) == "logits"
    leaves = flatten(output)
    return bool(leaves) and _looks_like_logits(leaves[0])


def compare(candidate: list[torch.Tensor], reference: list[torch.Tensor], logits: bool = True) -> dict[str, Any]:
    """``max_abs_err`` and ``rel_err`` (worst leaf; relative = ||a-b|| / ||b||), and, for
    ``logits``, ``agreement``: the share of equal argmax over the last dim of the first output."""
    if len(candidate) != len(reference):
        return {"error": f"output has {len(candidate)} tensors, reference has {len(reference)}",
                "max_abs_err": math.inf, "rel_err": math.inf}
    max_abs, rel = 0.0, 0.0
    for i, (a, b) in enumerate(zip(candidate, reference, strict=True)):
        if a.shape != b.shape:
            return {"error": f"output {i} has shape {tuple(a.shape)}, reference {tuple(b.shape)}",
                    "max_abs_err": math.inf, "rel_err": math.inf}
        leaf_abs, leaf_rel = _errors(a, b)
        max_abs, rel = max(max_abs, leaf_abs), max(rel, leaf_rel)
    result: dict[str, Any] = {"max_abs_err": max_abs, "rel_err": rel}
    if logits and reference and _looks_like_logits(reference[0]):
        result.update(agreement(candidate[0], reference[0]))
    return result


def agreement(candidate: torch.Tensor, reference: torch.Tensor) -> dict[str, Any]:
    """Argmax agreement over the last dim: ``agreement`` (raw: the share of equal argmax) and
    ``agreement_margin`` (a flip counts only where the reference's top-2 margin exceeds the
    variant's error scale, ``error_scale``), with the number of ``samples`` and ``flips``."""
    with torch.no_grad():
        a = candidate.detach().cpu().double().reshape(-1, candidate.shape[-1])  # (N, classes)
        b = reference.detach().cpu().double().reshape(-1, reference.shape[-1])
        flipped = a.argmax(-1) != b.argmax(-1)
        top2 = b.topk(2, dim=-1).values
        margin = top2[:, 0] - top2[:, 1]  # (N,)
        diff = (a - b)[torch.isfinite(a - b)]
        scale = ERROR_SCALE * float(diff.pow(2).mean().sqrt()) if diff.numel() else 0.0
        counted = flipped & (margin > scale)
    n = max(int(b.shape[0]), 1)
    return {"agreement": 1 - int(flipped.sum()) / n, "agreement_margin": 1 - int(counted.sum()) / n,
            "samples": int(b.shape[0]), "flips": int(flipped.sum()), "near_tie_flips": int((flipped & ~counted).sum()),
            "error_scale": scale}


def concat(chunks: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """The leaves of several batches' outputs joined along dim 0 (scalars stacked)."""
    if len(chunks) == 1:
        return chunks[0]
    if len({len(c) for c in chunks}) != 1:
        return chunks[0]  # a structure that varies with the batch: compared on the first batch only
    return [torch.cat(leaves) if leaves[0].dim() > 0 else torch.stack(leaves) for leaves in zip(*chunks, strict=True)]


def batches(inputs: Inputs, samples: int, seed: int, spec: InputSpec | None = None,
            own: Inputs | None = None) -> list[Inputs]:
    """The fidelity batches: the timing batch first, then batches of the same shape: the user's
    ``own`` inputs split into timing-sized batches, else about ``samples`` rows drawn from
    ``spec``, else drawn like the timing batch (floats with its mean and spread, integers in its range)."""
    b = inputs.batch_size() or 1
    if own is not None:
        size = own.batch_size()
        if size is None or size < b:
            return [inputs, own.with_batch_size(b)] if own.tensors() else [inputs]
        return [inputs, *(own.map(lambda t, i=i: t[i:i + b]) for i in range(0, size - b + 1, b))]
    count = max(1, -(-samples // b))
    if spec is not None:
        return [inputs, *(spec.make(b, seed=seed + 1000 + k) for k in range(count - 1))]
    generator = torch.Generator().manual_seed(seed + 1000)
    return [inputs, *(inputs.map(lambda t: _like(t, generator)) for _ in range(count - 1))]


def _like(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A random tensor shaped and distributed like ``t``."""
    if t.is_floating_point():
        std, mean = (float(t.float().std()), float(t.float().mean())) if t.numel() > 1 else (1.0, 0.0)
        return (torch.randn(t.shape, generator=generator) * (std or 1.0) + mean).to(t.dtype)
    if t.dtype == torch.bool:
        return torch.randint(0, 2, t.shape, generator=generator).bool()
    if t.numel() == 0:
        return t.clone()
    low, high = int(t.min()), int(t.max())
    return torch.randint(low, high + 1, t.shape, generator=generator, dtype=t.dtype)


def load_metric(spec: str) -> Callable[[Any], float]:
    """The user's metric ``fn(model) -> score`` from ``path/file.py:fn`` or ``package.module:fn``
    (``SettingError`` naming ``metric`` when it cannot be found)."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise SettingError("metric", f"expected file.py:function or package.module:function, got {spec!r}")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise SettingError("metric", f"file {target!r} not found; give an existing file.py:function")
        module_spec = importlib.util.spec_from_file_location(f"pitstop_metric_{path.stem}", path)
        if module_spec is None or module_spec.loader is None:
            raise SettingError("metric", f"cannot load {target!r} as Python")
        module = importlib.util.module_from_spec(module_spec)
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            raise SettingError("metric", f"importing {target} failed: {type(exc).__name__}: {exc}") from None
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise SettingError("metric", f"cannot import {target!r} ({exc})") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise SettingError("metric", f"{target} has no function {name!r}")
    return fn


def score(metric: Callable[[Any], float], model: Any) -> float:
    """The metric of ``model`` as a float (no autograd)."""
    with torch.no_grad():
        value = metric(model)
    return float(value.item() if isinstance(value, torch.Tensor) else value)


def _errors(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    with torch.no_grad():
        a, b = a.detach().cpu().double(), b.detach().cpu().double()
        if not torch.equal(torch.isfinite(a), torch.isfinite(b)):
            return math.inf, math.inf
        finite = torch.isfinite(b)
        diff = (a - b)[finite]
        if diff.numel() == 0:
            return 0.0, 0.0
        max_abs = float(diff.abs().max())
        norm = float(b[finite].norm())
        return max_abs, float(diff.norm()) / norm if norm > 0 else (0.0 if max_abs == 0 else math.inf)


def _looks_like_logits(t: torch.Tensor) -> bool:
    return t.is_floating_point() and t.dim() >= 2 and t.shape[-1] >= 2


def within(fidelity: dict[str, Any], rel_tol: float, min_agreement: float | None = None) -> bool:
    """True when the relative error is within tolerance (and shapes matched), and, where
    ``min_agreement`` is given and the output is logits, the margin-aware argmax agreement is
    high enough."""
    if "error" in fidelity or fidelity["rel_err"] > rel_tol:
        return False
    return min_agreement is None or _agreement_of(fidelity) >= min_agreement


def _agreement_of(fidelity: dict[str, Any]) -> float:
    return float(fidelity.get("agreement_margin", fidelity.get("agreement", 1.0)))


def admitted_by_metric(fidelity: dict[str, Any], tolerance: float) -> bool:
    """With a user metric: the candidate's score is at most ``tolerance`` below the reference's."""
    found, reference = fidelity.get("metric"), fidelity.get("metric_reference")
    return found is not None and reference is not None and reference - found <= tolerance
