"""Renderers: a JSON document in (any command's ``to_dict()``), text or HTML out, chosen by the
document's ``kind``. This package imports no result class; the values reach it through their
document (``table()``, ``__str__``, ``_repr_html_`` call ``text`` / ``fragment`` on ``to_dict()``),
the CLI prints ``renderables``, and ``pitstop report FILE.json`` re-renders a saved document the
same way, so the screen shows one thing whether the run is live or read back."""

from __future__ import annotations

import io
from typing import Any

WIDTH = 200  # pipes and CI: wide, so the tables stay readable (the CLI's console does the same)
_REGISTRY: dict[str, Any] = {}


def registry() -> dict[str, Any]:
    """Every document kind -> its ``Kind`` (``report.kind``): gathered from the ``KINDS`` of each
    module under ``report/`` (a new kind is one module; nothing here changes)."""
    if not _REGISTRY:
        import importlib
        import pkgutil

        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            module = importlib.import_module(f"{__name__}.{info.name}")
            _REGISTRY.update(getattr(module, "KINDS", {}))
    return _REGISTRY


def __getattr__(name: str) -> Any:
    if name == "KINDS":  # the kinds there are, in a stable order (the registry's)
        return tuple(registry())
    raise AttributeError(f"module 'pitstop.report' has no attribute {name!r}")


def kind_of(doc: dict[str, Any]) -> str:
    """The document's kind, or a one-line ``UsageError`` naming the kinds there are."""
    from pitstop.errors import UsageError

    kind = doc.get("kind")
    if not isinstance(kind, str) or kind not in registry():  # a mangled file's kind may be any JSON value
        raise UsageError(f"no report for kind {kind!r}; reports exist for {', '.join(registry())}")
    return str(kind)


def renderables(doc: dict[str, Any]) -> list[Any]:
    """What the terminal shows for ``doc``: rich tables and text (plain strings print as they are)."""
    return list(registry()[kind_of(doc)].text(doc))


def print_to(console: Any, items: list[Any]) -> None:
    """Print ``items`` on a rich console: text as it is (a path may hold [brackets]), tables with
    every plain string cell literal."""
    from pitstop.report.console import literal

    for item in items:
        if isinstance(item, str):
            console.print(item, markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(literal(item))


def text(doc: dict[str, Any], width: int = WIDTH) -> str:
    """The terminal report of ``doc`` as plain text (what a pipe receives from the live command)."""
    from rich.console import Console

    buffer = io.StringIO()
    print_to(Console(file=buffer, width=width, no_color=True, highlight=False), renderables(doc))
    return buffer.getvalue()


def html(doc: dict[str, Any]) -> str:
    """The self-contained HTML page of ``doc`` (inline CSS and SVG, no script)."""
    from pitstop.report.pages import render

    return render(doc)


def fragment(doc: dict[str, Any]) -> str:
    """The notebook HTML fragment of ``doc`` (the page's charts and tables, without the page)."""
    from pitstop.report.pages import render_fragment

    return render_fragment(doc)
