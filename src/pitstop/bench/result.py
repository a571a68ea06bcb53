"""Values: a whole bench run, ``BenchResult``: the rows of its one interleaved group
(``pitstop.engine.result.Rows``) with the published claims checked against them and the advice.
Its document renders through ``pitstop.report`` (``str()``, ``table()``, notebook HTML)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pitstop._document import Rendered, envelope
from pitstop.engine.result import Comparison, Measurement, Rows, Status, row_document

__all__ = ["BenchResult", "Comparison", "Measurement", "Status", "bench_document", "row_document"]


@dataclass
class BenchResult(Rows, Rendered):
    """A whole bench run: what was measured, where, and every row."""

    claims_key: str | None = None

    @classmethod
    def _extra(cls, doc: dict[str, Any]) -> dict[str, Any]:
        return {"claims_key": doc.get("claims_key")}

    def advice(self) -> str:
        """One plain sentence drawn from the measured verdicts."""
        from pitstop.bench.advice import advise

        return advise(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (kind ``bench``: docs/json.md)."""
        return bench_document(self)


def bench_document(result: BenchResult) -> dict[str, Any]:
    """The whole bench document."""
    from pitstop.bench.claims import check_claims  # claims read results: imported when a document is made

    claims = [
        {"claim": c.claim.text, "source": c.claim.source, "variant": c.claim.variant,
         "baseline": c.claim.baseline, "batch_size": c.batch_size,
         "claimed_time_cut": [c.claim.low, c.claim.high], "measured_time_cut": c.measured,
         "measured_ci95": list(c.ci95) if c.ci95 else None, "verdict": c.verdict}
        for c in check_claims(result, result.claims_key)
    ]
    return envelope(
        "bench", result.environment, model=result.model,
        inputs={str(k): v for k, v in result.inputs.items()}, settings=result.settings,
        baseline=result.baseline, complete=result.complete, interrupted=result.interrupted,
        claims_key=result.claims_key,
        results=[row_document(result, r) for r in result.rows],
        claims=claims, advice=result.advice() if result.rows else None,
    )
