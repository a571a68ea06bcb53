"""Helpers of the settings objects (``BenchSettings``, ``OptimizeSettings``, ``LoaderSettings``, ...):
frozen dataclasses validated in ``__post_init__``, whose errors name the field (``SettingError``).
Public functions take ``settings=`` and keyword options alike through ``with_options``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, TypeVar

from pitstop.errors import SettingError, UsageError

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


SEED_MAX = 2**63 - 1  # torch.manual_seed takes 0 .. 2**64 - 1; numpy and the CLI agree on 2**63 - 1


def check_numbers(settings: Any) -> None:
    """NaN and infinity are refused in every float field (an infinite budget never ends, NaN
    compares false everywhere), and a ``seed`` field must fit the generators."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise SettingError(f.name, f"must be a finite number, got {value}")
    seed = getattr(settings, "seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:
        raise SettingError("seed", f"must be an integer in 0 .. 2**63-1, got {seed!r}")
