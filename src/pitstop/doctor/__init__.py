"""``pitstop doctor``: autograd mistakes caught as a real training run makes them (the R codes of
CODES.md), from PyTorch's own hooks."""

from __future__ import annotations

from typing import Any

from pitstop._callable import make_callable
from pitstop.doctor.api import Doctor
from pitstop.doctor.check import Check
from pitstop.doctor.findings import Finding
from pitstop.doctor.result import DoctorReport

__all__ = ["Check", "Doctor", "DoctorReport", "Finding", "doctor"]


def doctor(model: Any = None, optimizer: Any = None, **kwargs: Any) -> Doctor:
    """A ``Doctor`` to use as a context manager: ``with pitstop.doctor() as dr: train()``, then
    ``print(dr.report())``. Keyword arguments as for ``Doctor`` (``guard``, ``sync_every``, ...)."""
    return Doctor(model, optimizer, **kwargs)


make_callable(__name__, "pitstop.doctor:doctor")  # `with pitstop.doctor():` as before
