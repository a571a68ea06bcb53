"""What a document kind registers: how its JSON document renders as terminal text and as HTML, and
the name of its JSON Schema in ``pitstop.schemas``. A kind is one module under ``report/`` that ends
with ``KINDS = {"name": Kind(...)}``: ``pitstop.report`` finds it there (nothing else to edit but
the schema and the command that writes the document)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Doc = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """A document kind's renderers: ``text(doc)`` the terminal's items (rich renderables or plain
    strings), ``html(doc, fragment)`` the page (or the notebook fragment), ``schema`` its name."""

    text: Callable[[Doc], list[Any]]
    html: Callable[[Doc, bool], str]
    schema: str
