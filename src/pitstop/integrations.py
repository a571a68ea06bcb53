"""``pitstop.integrations.lightning`` / ``.hf``: the public names of the doctor's framework
adapters, which live in ``pitstop.doctor.adapters``."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["hf", "lightning"]  # noqa: F822 (resolved by __getattr__)


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"pitstop.doctor.adapters.{name}")
    raise AttributeError(f"module 'pitstop.integrations' has no attribute {name!r}")
