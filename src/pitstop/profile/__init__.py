"""``pitstop profile``: where an unmodified training script's step time goes (data wait,
host-to-device copies, forward, backward, optimizer, syncs, other), the syncs at their source
lines, the top ops per phase from a few profiled steps, and a verdict naming the pitstop command
that measures each fix. A set of consumers of the doctor's ``Session``: no second set of hooks.

Layers, bottom up: ``settings``, ``clock`` (wall clock or CUDA events), ``phases`` (the per-step
phase timeline), ``syncs`` (Tensor's syncing methods wrapped while profiling), ``drill``
(torch.profiler on a scheduled window), ``observe`` (what the verdict tests), ``verdict``,
``result`` (the report's values), ``api`` (``Profiler``) and ``script`` (a script run under it).
``pitstop.profile(...)`` is ``pitstop.profile.api.profile``. Names load on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pitstop._callable import make_callable

if TYPE_CHECKING:
    from pitstop.profile.api import Profiler, profile
    from pitstop.profile.result import ProfileReport
    from pitstop.profile.settings import ProfileSettings

__all__ = ["ProfileReport", "ProfileSettings", "Profiler", "profile"]

_LAZY = {"Profiler": "pitstop.profile.api", "profile": "pitstop.profile.api",
         "ProfileReport": "pitstop.profile.result", "ProfileSettings": "pitstop.profile.settings"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name == "adapters":  # pitstop.profile.adapters.lightning.ProfileCallback, imported on first use
        return importlib.import_module("pitstop.profile.adapters")
    raise AttributeError(f"module 'pitstop.profile' has no attribute {name!r}")


make_callable(__name__, "pitstop.profile.api:profile")
