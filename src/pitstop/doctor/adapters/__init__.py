"""Thin adapters of the doctor for training frameworks: ``pitstop.doctor.adapters.lightning`` and
``pitstop.doctor.adapters.hf`` (imported on first use; each needs its framework installed)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["hf", "lightning"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"pitstop.doctor.adapters.{name}")
    raise AttributeError(f"module 'pitstop.doctor.adapters' has no attribute {name!r}")
