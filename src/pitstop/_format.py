"""Number formatting shared by every report (terminal and HTML) and by the values' own summaries."""

from __future__ import annotations

from typing import Any


def fmt_bytes(n: int | None) -> str:
    """Human-readable bytes (binary units)."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def fmt_ms(x: float) -> str:
    """Milliseconds with three significant figures."""
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def literal(item: Any) -> Any:
    """``item`` with every plain string in its tables made literal text: a model path such as
    ``exp[lr=0.1]/m.py`` or ``mk[/bad]/m.py`` is shown as written, never read as Rich markup
    (swallowed, or a MarkupError after the run). Styled cells are ``Text`` already; groups recurse."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if isinstance(item, Group):
        for inner in item.renderables:
            literal(inner)
    elif isinstance(item, Table):
        if isinstance(item.title, str):
            item.title = Text(item.title, style="table.title")
        if isinstance(item.caption, str):
            item.caption = Text(item.caption, style="table.caption")
        for column in item.columns:
            column._cells = [Text(c) if isinstance(c, str) else literal(c) for c in column._cells]
    return item
