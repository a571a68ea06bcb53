"""The generation report: rows with prefill, per-token decode, tokens/s and memory, the stages,
the winner and its recipe, as one JSON document (kind ``generate``); rendering lives in
``pitstop.report.generate``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pitstop._document import Rendered, envelope
from pitstop.generate.group import GenMeasurement, percentile
from pitstop.generate.search import GenerateOutcome, ratio
from pitstop.generate.techniques import REFERENCE
from pitstop.stats import summarize_groups


def _ms(values: list[float]) -> dict[str, Any] | None:
    if not values:
        return None
    return {"median": 1e3 * percentile(values, 0.5), "p90": 1e3 * percentile(values, 0.9), "n": len(values)}  # type: ignore[operator]


def break_even_tokens(ref: GenMeasurement | None, row: GenMeasurement, new_tokens: int) -> float | None:
    """New tokens (per sequence) after which the variant's extra first-call time (compile) is paid
    back by its faster calls; None when it is not faster or costs under 0.1 s extra (noise)."""
    if ref is None or not (ref.measured and row.measured) or row.compile_s is None or ref.compile_s is None:
        return None
    extra = row.compile_s - ref.compile_s
    saved = (percentile(ref.samples_s, 0.5) - percentile(row.samples_s, 0.5)) / new_tokens  # type: ignore[operator]
    if extra < 0.1 or saved <= 0:
        return None
    return extra / saved


def row_document(row: GenMeasurement, ref: GenMeasurement | None, new_tokens: int) -> dict[str, Any]:
    """One result row."""
    doc: dict[str, Any] = {"variant": row.variant, "config": row.config, "batch_size": row.batch_size,
                           "stage": row.stage, "status": row.status}
    if row.samples_s:
        s = summarize_groups(row.replica_samples_s)
        doc["latency_ms"] = {"median": s.median * 1e3, "p10": s.p10 * 1e3, "p90": s.p90 * 1e3,
                             "ci95": [x * 1e3 for x in s.ci95], "n": s.n}
        doc["tokens_per_s"] = {"per_sequence": new_tokens / s.median, "total": row.batch_size * new_tokens / s.median}
        doc["prefill_ms"] = _ms(row.prefill_s)
        doc["decode_ms_per_token"] = _ms(row.steps_s or row.decode_s)
        decode = percentile(row.decode_s, 0.5)
        doc["decode_tokens_per_s"] = {"per_sequence": 1 / decode, "total": row.batch_size / decode} if decode else None
    doc["samples_ms"] = [t * 1e3 for t in row.samples_s]
    doc["samples_by_replica_ms"] = [[t * 1e3 for t in g] for g in row.replica_samples_s]
    doc["prefill_samples_ms"] = [t * 1e3 for t in row.prefill_s]
    doc["decode_samples_ms"] = [t * 1e3 for t in row.decode_s]
    doc["peak_memory_bytes"] = row.peak_memory_bytes
    doc["fidelity"] = row.fidelity
    for key in ("compile_s", "reason", "note"):
        if getattr(row, key) is not None:
            doc["first_call_s" if key == "compile_s" else key] = getattr(row, key)
    if row.details:
        doc["details"] = row.details
    r = ratio(ref, row) if ref is not None and row is not ref else None
    if r is not None:
        doc["speedup"] = {"vs": ref.variant, "median": r.median, "ci95": list(r.ci95), "verdict": r.verdict}  # type: ignore[union-attr]
        even = break_even_tokens(ref, row, new_tokens)
        if even is not None:
            doc["break_even_tokens"] = even
    return doc


@dataclass
class GenerateReport(Rendered):
    """A whole generation run: settings, environment, the outcome, the recipe."""

    model: str
    settings: dict[str, Any]
    environment: dict[str, Any]
    outcome: GenerateOutcome
    vocab: int
    recipe: str = ""
    saved: dict[str, str] = field(default_factory=dict)

    @property
    def winner(self) -> str:
        """The chosen variant's name (``inference_mode`` when nothing beat the reference)."""
        return self.outcome.winner.name

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        new_tokens = self.settings["new_tokens"]
        rows = []
        for row in self.outcome.rows:
            ref = next((r for r in self.outcome.rows if r.stage == row.stage and r.gen_config == REFERENCE), None)
            rows.append(row_document(row, ref, new_tokens))
        final = [d for d in rows if d["stage"] == "final" and d["variant"] == self.winner]
        winner: dict[str, Any] = {"variant": self.winner, "config": self.outcome.winner.to_dict(),
                                  "speedup": final[0].get("speedup") if final else None,
                                  "break_even_tokens": final[0].get("break_even_tokens") if final else None}
        if final and "tokens_per_s" in final[0]:
            winner["tokens_per_s"] = final[0]["tokens_per_s"]
        return envelope("generate", self.environment, model=self.model, settings=self.settings, vocab=self.vocab,
                        complete=self.outcome.complete, interrupted=self.outcome.interrupted,
                        search={"stages": self.outcome.stages}, results=rows, winner=winner,
                        notes=self.outcome.notes, recipe=self.recipe, saved=self.saved)
