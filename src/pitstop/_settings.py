"""Helpers of the settings objects (``BenchSettings``, ``OptimizeSettings``, ``LoaderSettings``, ...):
frozen dataclasses validated in ``__post_init__``, whose errors name the field (``SettingError``).
Public functions take ``settings=`` and keyword options alike through ``with_options``."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from pitstop.errors import UsageError

T = TypeVar("T")


def normalise(settings: Any, name: str, value: Any) -> None:
    """Set a field of a frozen dataclass from its ``__post_init__`` (a list made a tuple, ...)."""
    object.__setattr__(settings, name, value)


def with_options(cls: type[T], settings: T | None, options: dict[str, Any], call: str) -> T:
    """``settings`` (or the defaults) with ``options`` applied; an unknown option, or settings of
    another class, is a one-line usage error naming ``call``."""
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"{call}() got unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if settings is None:
        return cls(**options)
    if not isinstance(settings, cls):
        raise UsageError(f"{call}(): settings must be a {cls.__name__}, got {type(settings).__name__}")
    return dataclasses.replace(settings, **options) if options else settings  # type: ignore[type-var]
