"""The thin hook between values and their renderers: a value's ``table()``, ``__str__`` and
notebook ``_repr_html_`` ask here, and ``pitstop.report`` answers. The renderers are found by
module name on first use, so no value imports a renderer (the layering test checks imports)."""

from __future__ import annotations

import importlib
from typing import Any


def _report() -> Any:
    return importlib.import_module("pitstop.report")


def text(value: Any) -> str:
    """The plain-text report of ``value``."""
    return str(_report().text(value))


def html(value: Any) -> str:
    """An HTML fragment of ``value`` for notebooks."""
    return str(_report().html(value))
