"""The HTML page, or the notebook fragment, of any pitstop JSON document: the kind's own module
under ``report/`` draws it (``KINDS`` there); this module picks it by the document's kind."""

from __future__ import annotations

from typing import Any

from pitstop.report.svg import restart_ids


def render(doc: dict[str, Any]) -> str:
    """The page for any pitstop JSON document (a one-line ``UsageError`` for an unknown kind)."""
    from pitstop.report import kind_of, registry

    kind = kind_of(doc)
    restart_ids()
    return registry()[kind].html(doc, False)


def render_fragment(doc: dict[str, Any]) -> str:
    """The notebook fragment for any pitstop JSON document."""
    from pitstop.report import kind_of, registry

    return registry()[kind_of(doc)].html(doc, True)
