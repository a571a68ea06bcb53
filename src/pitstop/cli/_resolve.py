"""Resolving a ``file.py:name`` spec to a callable, with errors that name what it is."""

from __future__ import annotations

from typing import Any


def _resolve(spec: str, what: str) -> Any:
    """The callable a ``file.py:name`` / ``package.module:name`` spec names; errors say ``what`` it is."""
    from pitstop.errors import PitstopError
    from pitstop.models.spec import parse_model_spec

    try:
        return parse_model_spec(spec).resolve()
    except PitstopError as exc:
        message = str(exc)
        if message.startswith("model "):
            message = f"{what} " + message[len("model "):]
        raise type(exc)(message.replace("a factory:", f"a {what} name:")) from None
