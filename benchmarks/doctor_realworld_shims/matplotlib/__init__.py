"""A stand-in for matplotlib (not installed here): plotting calls do nothing."""

from __future__ import annotations

from typing import Any


def use(*args: Any, **kwargs: Any) -> None:
    return None
