"""What the terminal report needs of rich beyond tables: plain strings in tables made literal."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text


def literal(item: Any) -> Any:
    """``item`` with every plain string in its tables made literal text: a model path such as
    ``exp[lr=0.1]/m.py`` or ``mk[/bad]/m.py`` is shown as written, never read as Rich markup
    (swallowed, or a MarkupError after the run). Styled cells are ``Text`` already; groups recurse."""
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
