"""Thin adapters of the doctor for training frameworks: ``pitstop.integrations.lightning`` and
``pitstop.integrations.hf`` (imported on first use; each needs its framework installed)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["hf", "lightning"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"pitstop.integrations.{name}")
    raise AttributeError(f"module 'pitstop.integrations' has no attribute {name!r}")
