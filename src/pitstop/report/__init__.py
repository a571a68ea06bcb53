"""Renderers: a JSON document in (any command's ``to_dict()``), text or HTML out, chosen by the
document's ``kind``. This package imports no result class; the values reach it through their
document (``table()``, ``__str__``, ``_repr_html_`` call ``text`` / ``fragment`` on ``to_dict()``),
the CLI prints ``renderables``, and ``pitstop report FILE.json`` re-renders a saved document the
same way, so the screen shows one thing whether the run is live or read back."""

from __future__ import annotations

import io
from typing import Any

KINDS = ("bench", "optimize", "generate", "train", "profile", "doctor", "lint", "memory", "gradcheck", "data",
         "compare")
WIDTH = 200  # pipes and CI: wide, so the tables stay readable (the CLI's console does the same)


def kind_of(doc: dict[str, Any]) -> str:
    """The document's kind, or a one-line ``UsageError`` naming the kinds there are."""
    from pitstop.errors import UsageError

    kind = doc.get("kind")
    if kind not in KINDS:
        raise UsageError(f"no report for kind {kind!r}; reports exist for {', '.join(KINDS)}")
    return str(kind)


def renderables(doc: dict[str, Any]) -> list[Any]:
    """What the terminal shows for ``doc``: rich tables and text (plain strings print as they are)."""
    kind = kind_of(doc)
    if kind == "bench":
        from pitstop.report.bench import renderables as bench

        return bench(doc)
    if kind == "optimize":
        from pitstop.report.optimize import renderables as optimize

        return optimize(doc)
    if kind == "generate":
        from pitstop.report.generate import renderables as generate

        return generate(doc)
    if kind == "train":
        from pitstop.report.train import renderables as train

        return train(doc)
    if kind == "doctor":
        from pitstop.report.doctor import renderables as doctor

        return doctor(doc)
    return _plain(kind, doc)


def _plain(kind: str, doc: dict[str, Any]) -> list[Any]:
    if kind == "profile":
        from pitstop.report.profile import render_text

        return [render_text(doc)]
    if kind == "memory":
        from pitstop.report.memory import memory_renderables

        return memory_renderables(doc)
    if kind == "data":
        from pitstop.report.memory import data_renderables

        return data_renderables(doc)
    if kind == "gradcheck":
        from pitstop.report.memory import gradcheck_lines

        return ["\n".join(gradcheck_lines(doc))]
    if kind == "lint":
        from pitstop.report.lint import lint_lines

        return ["\n".join(lint_lines(doc))]
    from pitstop.report.compare import compare_lines

    return ["\n".join(compare_lines(doc))]


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
