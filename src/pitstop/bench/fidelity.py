"""Fidelity: how far a variant's outputs are from the fp32 eval reference.

Outputs may be nested (tuples, lists, dicts, dataclasses, HF-style output objects); leaves are
compared in order."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import torch


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
        same = candidate[0].float().argmax(-1) == reference[0].float().argmax(-1)
        result["agreement"] = float(same.float().mean())
    return result


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
    ``min_agreement`` is given and the output is logits, the argmax agreement is high enough."""
    if "error" in fidelity or fidelity["rel_err"] > rel_tol:
        return False
    return min_agreement is None or fidelity.get("agreement", 1.0) >= min_agreement
