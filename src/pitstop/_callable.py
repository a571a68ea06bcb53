"""Packages that are also the function they are named after: ``pitstop.bench`` is the folder
``bench/`` and ``pitstop.bench(model, ...)`` runs a bench. Public names stay as they were while
each capability is one package; the function's module is imported on the first call only."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any


class CallablePackage(types.ModuleType):
    """A package module whose call runs ``__call_target__`` (``"module:function"``)."""

    __call_target__ = ""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__function__()(*args, **kwargs)

    def __function__(self) -> Any:
        module, name = self.__call_target__.split(":")
        return getattr(importlib.import_module(module), name)


def make_callable(package: str, target: str) -> None:
    """Make the (already imported) package ``package`` callable as ``target``."""
    module = sys.modules[package]
    # safe: CallablePackage only adds __call__ to ModuleType (attributes and imports unchanged); never undone,
    # as the package is callable for the whole process
    module.__class__ = CallablePackage
    module.__call_target__ = target  # type: ignore[attr-defined]
