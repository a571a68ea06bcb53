"""A stand-in for requests: there is no network here; the benchmark writes the data first."""

from __future__ import annotations

from typing import Any


def get(url: str, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(f"no network here: cannot fetch {url}")
