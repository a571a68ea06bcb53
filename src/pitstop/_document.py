"""The JSON envelope every command writes, and its one schema version (docs/json.md):
``{"pitstop": VERSION, "schema": N, "kind": ..., "environment": {...}, ...}``."""

from __future__ import annotations

import math
from typing import Any

SCHEMA_VERSION = 1


def finite(value: Any) -> Any:
    """JSON has no NaN/Inf: such numbers become null (the row's reason explains them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def envelope(kind: str, environment: dict[str, Any] | None = None, **body: Any) -> dict[str, Any]:
    """A whole document of ``kind``: the envelope first, then ``body`` (NaN/inf made null)."""
    from pitstop import __version__

    head: dict[str, Any] = {"pitstop": __version__, "schema": SCHEMA_VERSION, "kind": kind}
    if environment is not None:
        head["environment"] = environment
    return finite({**head, **body})


_STATUSES = ("ok", "rejected", "failed", "skipped")
_GIVE = "give the JSON result a pitstop command wrote"


def read_document(path: str) -> dict[str, Any]:
    """A pitstop JSON document read back (``compare``, ``report``), or a one-line ``UsageError``
    saying what is wrong: missing, not JSON, NaN or Infinity, nested too deep, not an object,
    result rows with missing or mistyped fields."""
    import json
    from pathlib import Path

    from pitstop.errors import UsageError

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a number JSON allows")

    if not Path(path).is_file():
        raise UsageError(f"{path!r} not found; give the JSON result a pitstop command wrote")
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=no_constant)
    except RecursionError:
        raise UsageError(f"{path!r} is nested too deeply to be a pitstop result; {_GIVE}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path!r} is not a pitstop JSON result ({exc}); {_GIVE}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path!r} is not a pitstop result (a JSON {type(doc).__name__}, not an object)")
    problem = _results_problem(doc["results"]) if "results" in doc else None
    for key in ("environment", "settings"):
        if key in doc and not isinstance(doc[key], dict):
            problem = problem or f"{key} is a {type(doc[key]).__name__}, not an object"
    if problem:
        raise UsageError(f"{path!r}: {problem}; give the JSON result a pitstop command wrote")
    return doc


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _results_problem(results: Any) -> str | None:
    """What is wrong with a ``results`` list (None when every row has the fields readers use)."""
    if not isinstance(results, list):
        return f"results is a {type(results).__name__}, not a list"
    for i, row in enumerate(results):
        where = f"results[{i}]"
        if not isinstance(row, dict):
            return f"{where} is not an object"
        if not isinstance(row.get("variant"), str):
            return f"{where}.variant is missing or not a string"
        size = row.get("batch_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            return f"{where}.batch_size is missing or not a positive integer"
        if row.get("status") not in _STATUSES:
            return f"{where}.status is not one of {', '.join(_STATUSES)}"
        groups = row.get("samples_by_replica_ms") or [row.get("samples_ms") or []]
        if not isinstance(groups, list) or not all(isinstance(g, list) and all(_number(t) and t >= 0 for t in g)
                                                   for g in groups):
            return f"{where} has samples that are not finite non-negative numbers"
        for key in ("latency_ms", "latency_per_sample_ms"):
            if row.get(key) is not None and not _latency(row[key]):
                return f"{where}.{key} is not a latency summary (median, p10, p90, ci95)"
        for key in ("config", "fidelity"):
            if row.get(key) is not None and not isinstance(row[key], dict):
                return f"{where}.{key} is not an object"
    return None


def _latency(lat: Any) -> bool:
    return isinstance(lat, dict) and all(_number(lat.get(k)) for k in ("median", "p10", "p90")) \
        and isinstance(lat.get("ci95"), list) and len(lat["ci95"]) == 2 and all(_number(x) for x in lat["ci95"])


# -- rendering: a document's value never imports the renderer; the renderer registers itself ---------

_RENDERER: list[str] = []  # the module that renders documents (text, fragment), named by pitstop/__init__.py


def use_renderer(module: str) -> None:
    """Name the module whose ``text(doc)`` and ``fragment(doc)`` render every document (pitstop's
    own ``__init__`` names ``pitstop.report``; imported on the first rendering)."""
    _RENDERER[:] = [module]


def _renderer() -> Any:
    import importlib

    if not _RENDERER:
        raise RuntimeError("no document renderer registered (pitstop/__init__.py registers pitstop.report)")
    return importlib.import_module(_RENDERER[0])


class Rendered:
    """A value with a JSON document (``to_dict()``): its text, JSON, ``str()`` and notebook HTML,
    all from that document through the registered renderer (values compute, the renderer renders)."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self, indent: int | None = 2) -> str:
        """The JSON document as text."""
        import json

        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def table(self) -> str:
        """The plain-text report."""
        return str(_renderer().text(self.to_dict()))

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        return str(_renderer().fragment(self.to_dict()))
