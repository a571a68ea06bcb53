"""Resolving a ``file.py:name`` spec to a callable, with errors that name what it is."""

from __future__ import annotations

from typing import Any


def _resolve(spec: str, what: str, resolve: bool = True) -> Any:
    """The callable a ``file.py:name`` / ``package.module:name`` spec names; errors say ``what`` it is.
    ``resolve=False``: only the parsed spec (nothing imported: the code runs in another process)."""
    from pitstop.errors import PitstopError
    from pitstop.models.spec import parse_model_spec

    try:
        return parse_model_spec(spec).resolve() if resolve else parse_model_spec(spec)
    except PitstopError as exc:
        message = str(exc)
        if message.startswith("model "):
            message = f"{what} " + message[len("model "):]
        raise type(exc)(message.replace("a factory:", f"a {what} name:")) from None
