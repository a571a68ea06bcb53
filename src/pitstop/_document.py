"""The JSON envelope every command writes, and its one schema version (PRODUCT.md):
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
