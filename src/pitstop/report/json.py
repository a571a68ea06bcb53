"""The JSON document of PRODUCT.md, its JSON Schema, and atomic writes."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from pitstop.measure.measurement import BenchResult, Measurement
from pitstop.measure.stats import Summary

SCHEMA_VERSION = 1


def _finite(value: Any) -> Any:
    """JSON has no NaN/Inf: such numbers become null (the row's reason explains them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


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
    from pitstop import __version__
    from pitstop.measure.claims import check_claims

    claims = [
        {"claim": c.claim.text, "source": c.claim.source, "variant": c.claim.variant,
         "baseline": c.claim.baseline, "batch_size": c.batch_size,
         "claimed_time_cut": [c.claim.low, c.claim.high], "measured_time_cut": c.measured,
         "measured_ci95": list(c.ci95) if c.ci95 else None, "verdict": c.verdict}
        for c in check_claims(result)
    ]
    return _finite({
        "pitstop": __version__, "schema": SCHEMA_VERSION, "kind": "bench",
        "environment": result.environment, "model": result.model,
        "inputs": {str(k): v for k, v in result.inputs.items()}, "settings": result.settings,
        "baseline": result.baseline, "complete": result.complete, "interrupted": result.interrupted,
        "claims_key": result.claims_key,
        "results": [row_document(result, r) for r in result.rows],
        "claims": claims, "advice": result.advice() if result.rows else None,
    })


def check_writable(path: str | os.PathLike[str]) -> None:
    """Fail now, with a usage error, if the JSON file could not be written later."""
    from pitstop.errors import UsageError

    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"--json: cannot write {str(path)!r} ({reason}); choose a writable path") from None
    if target.is_dir():
        raise UsageError(f"--json: {str(path)!r} is a directory; give a file name such as out.json")


def write_atomic(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    """Write JSON so a reader never sees a half-written file (temp file, then rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(tmp, target)


_LATENCY = {
    "type": ["object", "null"],
    "required": ["median", "p10", "p90", "ci95", "n"],
    "properties": {
        "median": {"type": "number"}, "p10": {"type": "number"}, "p90": {"type": "number"},
        "ci95": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "n": {"type": "integer", "minimum": 1},
    },
}
_CONFIG_AXES = ["mode", "grad", "precision", "compile", "quant", "layout", "threads", "runtime"]

BENCH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pitstop bench result",
    "type": "object",
    "required": ["pitstop", "schema", "kind", "environment", "model", "settings", "baseline",
                 "complete", "interrupted", "results", "claims", "advice"],
    "properties": {
        "pitstop": {"type": "string"},
        "schema": {"const": SCHEMA_VERSION},
        "kind": {"enum": ["bench", "optimize"]},
        "environment": {"type": "object", "required": ["torch", "cpu", "threads", "pitstop", "device"]},
        "results": {"type": "array", "items": {
            "type": "object",
            "required": ["variant", "config", "batch_size", "status", "latency_ms", "samples_ms",
                         "throughput_per_s", "peak_memory_bytes", "activation_bytes", "fidelity"],
            "properties": {
                "variant": {"type": "string"},
                "config": {"type": "object", "required": _CONFIG_AXES},
                "batch_size": {"type": "integer", "minimum": 1},
                "status": {"enum": ["ok", "rejected", "failed", "skipped"]},
                "reason": {"type": "string"},
                "latency_ms": _LATENCY, "latency_per_sample_ms": _LATENCY,
                "samples_ms": {"type": "array", "items": {"type": "number"}},
                "throughput_per_s": {"type": ["number", "null"]},
                "peak_memory_bytes": {"type": ["integer", "null"]},
                "activation_bytes": {"type": ["integer", "null"]},
                "fidelity": {"type": ["object", "null"]},
                "compile_s": {"type": "number", "minimum": 0},
                "speedup": {"type": "object", "required": ["vs", "median", "ci95", "verdict"],
                            "properties": {"verdict": {"enum": ["faster", "slower", "within noise"]}}},
            },
        }},
        "claims": {"type": "array"},
        "advice": {"type": ["string", "null"]},
    },
}

FINDING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["code", "name", "severity", "message", "where"],
    "properties": {
        "code": {"type": "string", "pattern": "^PIT[0-9]{3}$"},
        "name": {"type": "string"},
        "severity": {"enum": ["error", "warning", "info"]},
        "message": {"type": "string"},
        "where": {"type": "string"},
        "fix": {"type": "string"},
        "step": {"type": ["integer", "null"]},  # doctor
        "count": {"type": "integer", "minimum": 1},  # doctor
        "ranks": {"type": "array", "items": {"type": "integer"}},
        "path": {"type": "string"}, "line": {"type": "integer"}, "col": {"type": "integer"},  # lint
    },
}

DOCTOR_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pitstop doctor report",
    "type": "object",
    "required": ["pitstop", "schema", "kind", "environment", "steps", "exit", "findings"],
    "properties": {
        "pitstop": {"type": "string"},
        "schema": {"const": SCHEMA_VERSION},
        "kind": {"const": "doctor"},
        "environment": {"type": "object", "required": ["torch", "cpu", "pitstop"]},
        "steps": {"type": "integer", "minimum": 0},
        "exit": {"type": "object", "required": ["status"],
                 "properties": {"status": {"enum": ["ok", "crashed", "exited", "interrupted"]}}},
        "findings": {"type": "array", "items": FINDING_SCHEMA},
        "guard": {"type": "object", "properties": {"skipped_steps": {"type": "array", "items": {"type": "integer"}}}},
        "data_wait_share": {"type": ["number", "null"]},
        "ranks": {"type": "integer", "minimum": 1},
    },
}
