"""JSON Schemas of the documents pitstop writes (validated in the tests): ``BENCH_SCHEMA`` (bench and
optimize rows), ``OPTIMIZE_SCHEMA``, ``DOCTOR_SCHEMA``, ``FINDING_SCHEMA`` (doctor and lint findings),
``LINT_SCHEMA``, ``TRAIN_SCHEMA``, ``PROFILE_SCHEMA``, ``MEMORY_SCHEMA``, ``GRADCHECK_SCHEMA``,
``DATA_SCHEMA``, ``COMPARE_SCHEMA``, ``GENERATE_SCHEMA``."""

from __future__ import annotations

from typing import Any

from pitstop._document import SCHEMA_VERSION

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
                 "properties": {"status": {"enum": ["ok", "crashed", "exited", "interrupted", "killed", "timed out"]}}},
        "findings": {"type": "array", "items": FINDING_SCHEMA},
        "guard": {"type": "object", "properties": {"skipped_steps": {"type": "array", "items": {"type": "integer"}}}},
        "data_wait_share": {"type": ["number", "null"]},
        "ranks": {"type": "integer", "minimum": 1},
    },
}

_TRAIN_AXES = ["precision", "compile", "optimizer", "zero_grad", "layout", "threads", "micro_batch", "checkpoint"]

TRAIN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pitstop train result",
    "type": "object",
    "required": ["pitstop", "schema", "kind", "environment", "model", "settings", "problem", "baseline",
                 "complete", "interrupted", "results", "winner", "search"],
    "properties": {
        "pitstop": {"type": "string"},
        "schema": {"const": SCHEMA_VERSION},
        "kind": {"const": "train"},
        "environment": {"type": "object", "required": ["torch", "cpu", "threads", "pitstop", "device"]},
        "problem": {"type": "object", "required": ["optimizer", "loss"]},
        "results": {"type": "array", "items": {
            "type": "object",
            "required": ["variant", "config", "batch_size", "status", "stage", "latency_ms", "samples_ms",
                         "throughput_per_s", "peak_memory_bytes", "fidelity"],
            "properties": {
                "variant": {"type": "string"},
                "config": {"type": "object", "required": _TRAIN_AXES},
                "batch_size": {"type": "integer", "minimum": 1},
                "status": {"enum": ["ok", "rejected", "failed", "skipped"]},
                "stage": {"enum": ["probe", "final"]},
                "reason": {"type": "string"},
                "latency_ms": _LATENCY,  # per training step
                "samples_ms": {"type": "array", "items": {"type": "number"}},
                "throughput_per_s": {"type": ["number", "null"]},
                "peak_memory_bytes": {"type": ["integer", "null"]},
                "fidelity": {"type": ["object", "null"], "properties": {
                    "gradients": {"type": "object", "required": ["overall_cosine", "min_cosine", "max_rel_err"]},
                    "trajectory": {"type": "object", "required": ["seeds", "losses"]},
                    "band": {"type": "object", "required": ["low", "high", "finals", "tolerance"]},
                }},
                "compile_s": {"type": "number", "minimum": 0},
                "break_even_steps": {"type": "number", "minimum": 0},
                "speedup": {"type": "object", "required": ["vs", "median", "ci95", "verdict"]},
            },
        }},
        "winner": {"type": "object", "required": ["variant", "config", "batch_size", "speedup", "verdict", "recipe"]},
        "search": {"type": "object", "required": ["elapsed_s", "time_budget_s", "stages"]},
    },
}

_MS_OR_NULL = {"type": ["number", "null"]}

PROFILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pitstop profile report",
    "type": "object",
    "required": ["pitstop", "schema", "kind", "environment", "step_ms", "phases", "syncs", "top_ops", "verdict"],
    "properties": {
        "pitstop": {"type": "string"},
        "schema": {"const": SCHEMA_VERSION},
        "kind": {"const": "profile"},
        "environment": {"type": "object", "required": ["torch", "cpu", "pitstop"]},
        "step_ms": {"type": "object", "required": ["median", "ci95"],
                    "properties": {"median": _MS_OR_NULL, "n": {"type": "integer", "minimum": 0},
                                   "ci95": {"type": ["array", "null"], "items": {"type": "number"},
                                            "minItems": 2, "maxItems": 2}}},
        "phases": {"type": "array", "minItems": 7, "maxItems": 7, "items": {
            "type": "object", "required": ["name", "median_ms", "share"],
            "properties": {"name": {"enum": ["data", "h2d", "forward", "backward", "optimizer", "sync", "other"]},
                           "median_ms": _MS_OR_NULL, "share": _MS_OR_NULL}}},
        "syncs": {"type": "array", "items": {"type": "object", "required": ["where", "per_step", "ms"],
                                             "properties": {"where": {"type": "string"}, "kind": {"type": "string"},
                                                            "per_step": {"type": "number"}, "ms": {"type": "number"}}}},
        "top_ops": {"type": "object", "additionalProperties": {"type": "array", "items": {
            "type": "object", "required": ["op", "ms", "calls"]}}},
        "verdict": {"type": "array", "items": {
            "type": "object", "required": ["cause", "share", "evidence", "action"],
            "properties": {"cause": {"type": "string", "pattern": "^[a-z0-9-]+$"}, "share": {"type": "number"},
                           "saves": {"type": "number"}, "evidence": {"type": "string"},
                           "action": {"type": "string"}}}},
        "steps": {"type": "integer", "minimum": 0},
        "exit": {"type": "object", "required": ["status"],
                 "properties": {"status": {"enum": ["ok", "crashed", "exited", "interrupted", "killed", "timed out"]}}},
        "page_faults": {"type": ["object", "null"], "required": ["per_step", "us_each", "ms_per_step", "share"],
                        "properties": {"per_step": {"type": "number", "minimum": 0}, "us_each": _MS_OR_NULL,
                                       "ms_per_step": _MS_OR_NULL, "share": _MS_OR_NULL}},
    },
}


_RATIO = {"type": ["object", "null"], "required": ["median", "ci95"],
          "properties": {"median": {"type": "number"},
                         "ci95": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}}}


def _envelope(kind: str, title: str, required: list[str], properties: dict[str, Any],
              environment: bool = True) -> dict[str, Any]:
    """A document's schema: the envelope every kind shares, and its own fields (a comparison of two
    documents has no environment of its own: it names where theirs differ)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "required": ["pitstop", "schema", "kind", *(["environment"] if environment else []), *required],
        "properties": {"pitstop": {"type": "string"}, "schema": {"const": SCHEMA_VERSION}, "kind": {"const": kind},
                       "environment": {"type": "object"}, **properties},
    }


OPTIMIZE_SCHEMA: dict[str, Any] = _envelope("optimize", "pitstop optimize result", [
    "model", "settings", "baseline", "complete", "interrupted", "results", "winner", "choice", "search"], {
    "results": {"type": "array", "items": {
        **BENCH_SCHEMA["properties"]["results"]["items"],
        "required": [*BENCH_SCHEMA["properties"]["results"]["items"]["required"], "stage"]}},
    "baseline": {"type": "string"},
    "winner": {"type": ["object", "null"], "required": ["variant", "config", "batch_size", "speedup", "verdict",
                                                        "recipe"],
               "properties": {"variant": {"type": "string"}, "config": {"type": "object", "required": _CONFIG_AXES},
                              "batch_size": {"type": "integer", "minimum": 1}, "speedup": _RATIO,
                              "verdict": {"type": "string"}, "recipe": {"type": ["string", "null"]}}},
    "choice": {"type": ["object", "null"], "required": ["variant", "batch_size", "reason"]},
    "search": {"type": "object", "required": ["elapsed_s", "time_budget_s", "stages"]},
})

LINT_SCHEMA: dict[str, Any] = _envelope("lint", "pitstop lint report", ["findings"], {
    "findings": {"type": "array", "items": FINDING_SCHEMA},
})

MEMORY_SCHEMA: dict[str, Any] = _envelope("memory", "pitstop memory report", [
    "activation_bytes", "parameter_saved_bytes", "input_saved_bytes", "step_ms", "modules"], {
    "activation_bytes": {"type": "integer", "minimum": 0},
    "parameter_saved_bytes": {"type": "integer", "minimum": 0},
    "input_saved_bytes": {"type": "integer", "minimum": 0},
    "step_ms": {"type": "number", "minimum": 0},
    "peak_step_bytes": {"type": ["integer", "null"]},
    "modules": {"type": "array", "items": {
        "type": "object", "required": ["module", "type", "depth", "saved_bytes", "subtree_bytes", "forward_ms"],
        "properties": {"module": {"type": "string"}, "saved_bytes": {"type": "integer", "minimum": 0},
                       "subtree_bytes": {"type": "integer", "minimum": 0}}}},
    "checkpoint": {"type": "object", "required": ["budget_bytes", "chosen", "met", "activation_bytes", "step_ms"],
                   "properties": {"chosen": {"type": "array", "items": {"type": "string"}},
                                  "met": {"type": "boolean"}, "slowdown": _RATIO}},
})

GRADCHECK_SCHEMA: dict[str, Any] = _envelope("gradcheck", "pitstop gradcheck result", [
    "function", "ok", "gradcheck", "gradgradcheck", "inputs", "messages"], {
    "function": {"type": "string"},
    "ok": {"type": "boolean"},
    "gradcheck": {"type": "boolean"},
    "gradgradcheck": {"type": ["boolean", "null"]},
    "inputs": {"type": "array", "items": {"type": "object", "required": ["index", "shape", "ok", "max_abs_err"]}},
    "messages": {"type": "array", "items": {"type": "string"}},
})

DATA_SCHEMA: dict[str, Any] = _envelope("data", "pitstop data result", ["best", "verdict", "gain", "trials"], {
    "best": {"type": "object"},
    "verdict": {"type": "string"},
    "gain": _RATIO,
    "trials": {"type": "array", "items": {
        "type": "object", "required": ["kwargs", "status", "batches_per_s", "samples_ms"],
        "properties": {"status": {"enum": ["ok", "failed", "skipped"]},
                       "samples_ms": {"type": "array", "items": {"type": "number"}}}}},
})

COMPARE_SCHEMA: dict[str, Any] = _envelope("compare", "pitstop compare result", [
    "before", "after", "threshold", "changes", "regressions", "nothing_compared"], {
    "threshold": {"type": "number", "minimum": 0},
    "changes": {"type": "array", "items": {
        "type": "object", "required": ["variant", "batch_size", "before_ms", "after_ms", "ratio", "ci95", "verdict"],
        "properties": {"verdict": {"enum": ["regression", "improvement", "within noise"]}}}},
    "regressions": {"type": "integer", "minimum": 0},
    "environment_differences": {"type": "array", "items": {"type": "string"}},
    "nothing_compared": {"type": ["string", "null"]},
}, environment=False)

_MS = {"type": ["object", "null"], "required": ["median", "p90", "n"],
       "properties": {"median": {"type": "number", "minimum": 0}, "p90": {"type": "number", "minimum": 0}}}
_PER_S = {"type": ["object", "null"], "required": ["per_sequence", "total"],
          "properties": {"per_sequence": {"type": "number", "minimum": 0}, "total": {"type": "number", "minimum": 0}}}
_GEN_AXES = ["cache", "compile", "dtype", "attention", "quant", "threads", "lookup"]

GENERATE_SCHEMA: dict[str, Any] = _envelope("generate", "pitstop generate result (optimize/bench --generate)", [
    "model", "settings", "vocab", "complete", "interrupted", "search", "results", "winner", "notes", "recipe"], {
    "settings": {"type": "object", "required": ["new_tokens", "prompt_len", "batch_sizes", "techniques",
                                                "gate_tokens", "tolerance", "threads", "device"]},
    "results": {"type": "array", "items": {
        "type": "object", "required": ["variant", "config", "batch_size", "stage", "status", "samples_ms",
                                       "peak_memory_bytes", "fidelity"],
        "properties": {
            "config": {"type": "object", "required": _GEN_AXES},
            "status": {"enum": ["ok", "rejected", "failed", "skipped"]},
            "latency_ms": _LATENCY, "prefill_ms": _MS, "decode_ms_per_token": _MS,
            "tokens_per_s": _PER_S, "decode_tokens_per_s": _PER_S,
            "first_call_s": {"type": "number", "minimum": 0},
            "break_even_tokens": {"type": "number", "minimum": 0},
            "fidelity": {"type": ["object", "null"]},
            "speedup": {"type": "object", "required": ["vs", "median", "ci95", "verdict"]}}}},
    "search": {"type": "object", "required": ["stages"]},
    "winner": {"type": "object", "required": ["variant", "config", "speedup"],
               "properties": {"config": {"type": "object", "required": _GEN_AXES}}},
    "notes": {"type": "array", "items": {"type": "string"}},
    "recipe": {"type": "string"},
})

BY_KIND: dict[str, dict[str, Any]] = {
    "bench": BENCH_SCHEMA, "optimize": OPTIMIZE_SCHEMA, "train": TRAIN_SCHEMA, "profile": PROFILE_SCHEMA,
    "doctor": DOCTOR_SCHEMA, "lint": LINT_SCHEMA, "memory": MEMORY_SCHEMA, "gradcheck": GRADCHECK_SCHEMA,
    "data": DATA_SCHEMA, "compare": COMPARE_SCHEMA, "generate": GENERATE_SCHEMA}  # each kind's schema
