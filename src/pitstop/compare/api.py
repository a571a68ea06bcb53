"""``pitstop compare before.json after.json``: did a change make things slower?

Variants are matched by (variant, batch size) between two bench/optimize JSON files. Each pair
is compared from the raw per-call samples (a bootstrap interval on the ratio of medians, replicas
resampled first): a regression when the interval lies above 1, an improvement when below,
within noise otherwise. Environments that differ (torch, CPU, threads, device) are warned about:
the comparison is then of machines as much as of code.

Only results that time the same thing are compared (``COMPARABLE``: a bench or optimize row is the
time of one forward call, a train row the time of one training step). A comparison that matched
nothing says why (``Comparison.nothing``) and is no verdict: the CLI exits 1, never "no regression"
on nothing. A side that was interrupted or did not complete is named (``Comparison.partial``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pitstop._document import Rendered, envelope, read_document
from pitstop.errors import SettingError, UsageError
from pitstop.stats import speedup_groups

ENV_KEYS = ("torch", "cpu", "threads", "device", "gpu", "pitstop", "python")
COMPARABLE = {"bench": "forward call", "optimize": "forward call", "train": "training step",
              "generate": "generate call"}  # what a row times


@dataclass
class Change:
    variant: str
    batch_size: int
    before_ms: float
    after_ms: float
    ratio: float  # after / before (> 1: slower)
    ci95: tuple[float, float]
    verdict: str  # regression | improvement | within noise

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "batch_size": self.batch_size, "before_ms": self.before_ms,
                "after_ms": self.after_ms, "ratio": self.ratio, "ci95": list(self.ci95), "verdict": self.verdict,
                "change": self.ratio - 1}


@dataclass
class Comparison(Rendered):
    before: str
    after: str
    changes: list[Change]
    threshold: float
    env_warnings: list[str] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)  # "'a.json' was interrupted": a side with results missing
    nothing: str | None = None  # why no variant was compared (then there is no verdict)

    @property
    def regressions(self) -> list[Change]:
        """Slower beyond noise and by more than the threshold."""
        return [c for c in self.changes if c.verdict == "regression" and c.ratio - 1 > self.threshold]

    def to_dict(self) -> dict[str, Any]:
        return envelope("compare", before=self.before, after=self.after,
                        threshold=self.threshold, changes=[c.to_dict() for c in self.changes],
                        regressions=len(self.regressions), environment_differences=self.env_warnings,
                        only_before=self.only_before, only_after=self.only_after, partial=self.partial,
                        nothing_compared=self.nothing)

    def lines(self) -> list[str]:
        """The comparison as text, line by line (rendered from the document by the renderer)."""
        return self.table().rstrip("\n").split("\n")

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _load(path: str) -> dict[str, Any]:
    doc = read_document(path)  # one-line errors for files that are not JSON, too deep, or malformed rows
    if doc.get("kind") not in COMPARABLE or "results" not in doc:
        raise UsageError(f"{path!r} is not a pitstop bench/optimize result (kind {doc.get('kind')!r}); "
                         "compare works on the JSON results of bench, optimize, train and generation")
    return doc


def _same_kind(before_path: str, before: dict[str, Any], after_path: str, after: dict[str, Any]) -> None:
    """A forward call's time is not a training step's: results of kinds that time different things
    are refused, naming both kinds and the pairs that can be compared."""
    kb, ka = before["kind"], after["kind"]
    if COMPARABLE[kb] != COMPARABLE[ka]:
        raise UsageError(f"cannot compare {before_path!r} (a {kb} result, time per {COMPARABLE[kb]}) with "
                         f"{after_path!r} (a {ka} result, time per {COMPARABLE[ka]}); compare bench or optimize "
                         f"results with each other, train results with train results, generate with generate")


def _partial(path: str, doc: dict[str, Any]) -> str | None:
    """Why ``doc`` holds only part of its run (None: complete, or a document that does not say)."""
    if doc.get("interrupted") is True:
        return f"{path!r} was interrupted"
    if doc.get("complete") is False:
        return f"{path!r} did not complete"
    return None


def _nothing(paths: tuple[str, str], docs: tuple[dict[str, Any], dict[str, Any]],
             rows: tuple[dict[Any, Any], dict[Any, Any]]) -> str | None:
    """Why no (variant, batch size) was compared; None when one was."""
    if any(k in rows[1] for k in rows[0]):
        return None
    empty = [f"{path!r} has no measured rows ({_why_empty(doc)})"
             for path, doc, found in zip(paths, docs, rows, strict=True) if not found]
    if empty:
        return "; ".join(empty)
    return (f"no variant at the same batch size is in both files ({len(rows[0])} in {paths[0]!r}, "
            f"{len(rows[1])} in {paths[1]!r}: see 'only in')")


def _why_empty(doc: dict[str, Any]) -> str:
    if doc.get("interrupted") is True:
        return "interrupted before any result"
    if doc["results"]:
        return "every row failed, was rejected or skipped"
    return "its results are empty"


def _rows(doc: dict[str, Any]) -> dict[tuple[str, int], list[list[float]]]:
    """(variant, batch) -> per-replica samples in seconds; a later row (optimize's final stage)
    replaces an earlier one."""
    rows = {}
    for r in doc["results"]:
        groups = r.get("samples_by_replica_ms") or ([r["samples_ms"]] if r.get("samples_ms") else [])
        groups = [[t / 1e3 for t in g] for g in groups if g]
        if r.get("status") == "ok" and groups:
            rows[(r["variant"], int(r["batch_size"]))] = groups
    return rows


def environment_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key in ENV_KEYS:
        if key in a or key in b:
            va, vb = a.get(key), b.get(key)
            if va != vb:
                out.append(f"{key}: {va!r} vs {vb!r}")
    return out


def compare(before_path: str, after_path: str, threshold: float = 0.05) -> Comparison:
    """Compare two result files (see the module docstring)."""
    if not 0 <= threshold < 10:
        raise SettingError("threshold", f"must be a fraction such as 0.05, got {threshold}")
    before, after = _load(before_path), _load(after_path)
    _same_kind(before_path, before, after_path, after)
    a, b = _rows(before), _rows(after)
    changes = []
    for key in [k for k in a if k in b]:
        r = speedup_groups(b[key], a[key])  # median(after) / median(before): > 1 = slower, with its interval
        verdict = "regression" if r.ci95[0] > 1 else "improvement" if r.ci95[1] < 1 else "within noise"
        changes.append(Change(key[0], key[1], _median_ms(a[key]), _median_ms(b[key]), r.median, r.ci95, verdict))
    return Comparison(before_path, after_path, changes, threshold,
                      environment_differences(before.get("environment", {}), after.get("environment", {})),
                      [_name(k) for k in a if k not in b], [_name(k) for k in b if k not in a],
                      [p for p in (_partial(before_path, before), _partial(after_path, after)) if p],
                      _nothing((before_path, after_path), (before, after), (a, b)))


def _median_ms(groups: list[list[float]]) -> float:
    pooled = sorted(t for g in groups for t in g)
    return pooled[len(pooled) // 2] * 1e3


def _name(key: tuple[str, int]) -> str:
    return f"{key[0]} b={key[1]}"
