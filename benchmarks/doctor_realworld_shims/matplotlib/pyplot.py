"""Every pyplot function is a no-op (the examples only save figures)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def __getattr__(name: str) -> Callable[..., None]:
    def _noop(*args: Any, **kwargs: Any) -> None:
        return None

    return _noop
