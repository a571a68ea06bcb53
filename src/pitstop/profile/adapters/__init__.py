"""Thin adapters of the profiler for training frameworks: ``pitstop.profile.adapters.lightning``
and ``pitstop.profile.adapters.hf`` (imported on first use; each needs its framework installed)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["hf", "lightning"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"pitstop.profile.adapters.{name}")
    raise AttributeError(f"module 'pitstop.profile.adapters' has no attribute {name!r}")
