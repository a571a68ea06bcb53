"""``pitstop doctor``: autograd mistakes caught as a real training run makes them (the R codes of
``pitstop.codes``), from PyTorch's own hooks. Names load on first use (``pitstop doctor``'s own
process never imports torch: the script runs in a child)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pitstop._callable import make_callable

if TYPE_CHECKING:
    from pitstop.doctor.api import Doctor
    from pitstop.doctor.check import Check
    from pitstop.doctor.findings import Finding
    from pitstop.doctor.result import DoctorReport

__all__ = ["Check", "Doctor", "DoctorReport", "Finding", "doctor"]

_LAZY = {"Doctor": "pitstop.doctor.api", "Check": "pitstop.doctor.check", "Finding": "pitstop.doctor.findings",
         "DoctorReport": "pitstop.doctor.result"}


def doctor(model: Any = None, optimizer: Any = None, **kwargs: Any) -> Doctor:
    """A ``Doctor`` to use as a context manager: ``with pitstop.doctor() as dr: train()``, then
    ``print(dr.report())``. Keyword arguments as for ``Doctor`` (``guard``, ``sync_every``, ...)."""
    from pitstop.doctor.api import Doctor

    return Doctor(model, optimizer, **kwargs)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name == "adapters":
        return importlib.import_module("pitstop.doctor.adapters")
    raise AttributeError(f"module 'pitstop.doctor' has no attribute {name!r}")


make_callable(__name__, "pitstop.doctor:doctor")  # `with pitstop.doctor():` as before
