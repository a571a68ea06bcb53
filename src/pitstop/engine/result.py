"""``Rows``: the rows of one interleaved group (``pitstop.engine.measurement.Measurement``, re-exported
here) measured alongside a baseline, and each variant's comparison with it. A bench run's result
(``pitstop.bench.result.BenchResult``) is one; each stage of the optimize and train searches is one.
Statistics derive from the raw samples; ``row_document`` is one row's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pitstop.engine.measurement import Comparison, Measurement, Status
from pitstop.stats import Summary, speedup_groups

__all__ = ["Comparison", "Measurement", "Rows", "Status", "row_document"]


@dataclass
class Rows:
    """One interleaved group: what was measured, where, and every row."""

    model: str
    inputs: dict[int, str]  # batch size -> inputs description
    settings: dict[str, Any]
    environment: dict[str, Any]
    baseline: str
    rows: list[Measurement] = field(default_factory=list)
    complete: bool = False
    interrupted: bool = False
    _comparisons: dict[tuple[str, int, str], Comparison | None] = field(default_factory=dict, repr=False)

    def rows_at(self, batch_size: int) -> list[Measurement]:
        """Rows of one batch size, in variant order."""
        return [r for r in self.rows if r.batch_size == batch_size]

    @property
    def batch_sizes(self) -> list[int]:
        """Batch sizes with results, in run order."""
        return list(dict.fromkeys(r.batch_size for r in self.rows))

    def row(self, variant: str, batch_size: int) -> Measurement | None:
        """The row of a variant at a batch size."""
        return next((r for r in self.rows if r.variant == variant and r.batch_size == batch_size), None)

    def comparison(self, variant: str, batch_size: int, baseline: str | None = None) -> Comparison | None:
        """Speed-up of ``variant`` over ``baseline`` (default: the run's baseline) at a batch size."""
        key = (variant, batch_size, baseline or self.baseline)
        if key not in self._comparisons:
            self._comparisons[key] = self._compare(*key)
        return self._comparisons[key]

    def _compare(self, variant: str, batch_size: int, baseline: str | None) -> Comparison | None:
        base_name = baseline or self.baseline
        base, cand = self.row(base_name, batch_size), self.row(variant, batch_size)
        if not (base and cand and base.measured and cand.measured):
            return None
        ratio = speedup_groups(base.replica_samples_s, cand.replica_samples_s)
        return Comparison(variant, base_name, batch_size, ratio)

    @property
    def comparisons(self) -> list[Comparison]:
        """Every measured variant against the baseline."""
        found = (self.comparison(r.variant, r.batch_size) for r in self.rows if r.variant != self.baseline)
        return [c for c in found if c is not None]

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Any:
        """Rebuild a result from its JSON document (raw samples included), e.g. to render it again."""
        rows = [Measurement(
            r["variant"], r["config"], r["batch_size"], r["status"], r.get("reason"),
            [[t / 1e3 for t in g] for g in r.get("samples_by_replica_ms") or [r["samples_ms"]]],
            r.get("peak_memory_bytes"), r.get("activation_bytes"), r.get("fidelity"), r.get("warmup"),
            r.get("note"), round((r.get("page_faults_per_call") or 0) * len(r["samples_ms"])),
            r.get("compile_s"), r.get("details") or {}, r.get("phases_s") or {},
        ) for r in doc["results"]]
        return cls(model=doc["model"], inputs={int(k): v for k, v in doc.get("inputs", {}).items()},
                   settings=doc["settings"], environment=doc["environment"], baseline=doc["baseline"], rows=rows,
                   complete=doc["complete"], interrupted=doc["interrupted"], **cls._extra(doc))

    @classmethod
    def _extra(cls, doc: dict[str, Any]) -> dict[str, Any]:
        """A subclass's own fields, read from its document."""
        return {}


def _summary(s: Summary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"median": s.median, "p10": s.p10, "p90": s.p90, "ci95": list(s.ci95), "n": s.n}


def row_document(result: Rows, row: Measurement) -> dict[str, Any]:
    """One result row."""
    doc: dict[str, Any] = {
        "variant": row.variant, "config": row.config, "batch_size": row.batch_size,
        "status": row.status,
        "latency_ms": _summary(row.latency), "latency_per_sample_ms": _summary(row.per_sample),
        "samples_ms": [s * 1e3 for s in row.samples_s],
        "samples_by_replica_ms": [[s * 1e3 for s in group] for group in row.replica_samples_s],
        "throughput_per_s": row.throughput,
        "peak_memory_bytes": row.peak_memory_bytes, "activation_bytes": row.activation_bytes,
        "fidelity": row.fidelity, "warmup": row.warmup, "page_faults_per_call": row.page_faults_per_call,
    }
    if row.compile_s is not None:
        doc["compile_s"] = row.compile_s
    if row.details:
        doc["details"] = row.details
    if row.phases_s:
        doc["phases_s"] = row.phases_s
    if row.reason:
        doc["reason"] = row.reason
    if row.note:
        doc["note"] = row.note
    comparison = next((c for c in result.comparisons
                       if c.variant == row.variant and c.batch_size == row.batch_size), None)
    if comparison is not None:
        r = comparison.ratio
        doc["speedup"] = {"vs": comparison.baseline, "median": r.median, "ci95": list(r.ci95),
                          "verdict": r.verdict}
    return doc
