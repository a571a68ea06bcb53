"""Values: a whole bench run (its rows are ``pitstop.engine.measurement.Measurement``, re-exported
here).

Statistics derive from the raw samples; rendering lives in ``pitstop.report``, which takes the
JSON document: ``table()``, ``__str__`` and ``_repr_html_`` hand it ``to_dict()``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pitstop._document import envelope
from pitstop.engine.measurement import Comparison, Measurement, Status
from pitstop.stats import Summary, speedup_groups

__all__ = ["BenchResult", "Comparison", "Measurement", "Status", "bench_document", "row_document"]


@dataclass
class BenchResult:
    """A whole bench run: what was measured, where, and every row."""

    model: str
    inputs: dict[int, str]  # batch size -> inputs description
    settings: dict[str, Any]
    environment: dict[str, Any]
    baseline: str
    rows: list[Measurement] = field(default_factory=list)
    complete: bool = False
    interrupted: bool = False
    claims_key: str | None = None
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

    def advice(self) -> str:
        """One plain sentence drawn from the measured verdicts."""
        from pitstop.bench.advice import advise

        return advise(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> BenchResult:
        """Rebuild a result from its JSON document (raw samples included), e.g. to render it again."""
        rows = [Measurement(
            r["variant"], r["config"], r["batch_size"], r["status"], r.get("reason"),
            [[t / 1e3 for t in g] for g in r.get("samples_by_replica_ms") or [r["samples_ms"]]],
            r.get("peak_memory_bytes"), r.get("activation_bytes"), r.get("fidelity"), r.get("warmup"),
            r.get("note"), round((r.get("page_faults_per_call") or 0) * len(r["samples_ms"])),
            r.get("compile_s"), r.get("details") or {}, r.get("phases_s") or {},
        ) for r in doc["results"]]
        return cls(doc["model"], {int(k): v for k, v in doc.get("inputs", {}).items()}, doc["settings"],
                   doc["environment"], doc["baseline"], rows, doc["complete"], doc["interrupted"],
                   doc.get("claims_key"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (kind ``bench``: docs/json.md)."""
        return bench_document(self)

    def to_json(self, indent: int | None = 2) -> str:
        """The JSON document as text."""
        import json

        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def table(self) -> str:
        """The plain-text report: tables, claims, advice."""
        from pitstop import report

        return report.text(self.to_dict())

    def _repr_html_(self) -> str:
        from pitstop import report

        return report.fragment(self.to_dict())

    def __str__(self) -> str:
        return self.table()


def _summary(s: Summary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"median": s.median, "p10": s.p10, "p90": s.p90, "ci95": list(s.ci95), "n": s.n}


def row_document(result: BenchResult, row: Measurement) -> dict[str, Any]:
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


def bench_document(result: BenchResult) -> dict[str, Any]:
    """The whole bench document."""
    from pitstop.bench.claims import check_claims  # claims read results: imported when a document is made

    claims = [
        {"claim": c.claim.text, "source": c.claim.source, "variant": c.claim.variant,
         "baseline": c.claim.baseline, "batch_size": c.batch_size,
         "claimed_time_cut": [c.claim.low, c.claim.high], "measured_time_cut": c.measured,
         "measured_ci95": list(c.ci95) if c.ci95 else None, "verdict": c.verdict}
        for c in check_claims(result)
    ]
    return envelope(
        "bench", result.environment, model=result.model,
        inputs={str(k): v for k, v in result.inputs.items()}, settings=result.settings,
        baseline=result.baseline, complete=result.complete, interrupted=result.interrupted,
        claims_key=result.claims_key,
        results=[row_document(result, r) for r in result.rows],
        claims=claims, advice=result.advice() if result.rows else None,
    )
