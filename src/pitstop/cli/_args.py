"""Argument types and the parser class shared by every command (no torch imported here)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from pitstop._settings import SEED_MAX
from pitstop.errors import SettingError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1,8,32, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 1,8,32, got {text!r}")
    return values


def _positive(kind: type) -> Any:
    """A positive int or float; NaN and infinity are refused here, before anything runs."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite positive number, got {text!r}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value
    return parse


def _fraction(text: str) -> float:
    """A finite number >= 0 (a threshold such as 0.05)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.05, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0 such as 0.05, got {text!r}")
    return value


def _seed(text: str) -> int:
    """A seed: an integer in 0 .. 2**63 - 1 (``1e20`` or ``-1`` are refused up front)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed such as 0, got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"expected a seed in 0 .. 2**63-1, got {text!r}")
    return value


def _env_pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--worker-env: expected KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value
    return pairs


def flag_of(field: str, renamed: dict[str, str] | None = None) -> str:
    """The command-line flag that sets a settings field: ``budget_s`` -> ``--budget-s``."""
    return (renamed or {}).get(field) or "--" + field.replace("_", "-")


@contextmanager
def flag_errors(renamed: dict[str, str] | None = None) -> Iterator[None]:
    """Inside, a settings field's error reads as its flag's: ``budget_s: must be positive`` becomes
    ``--budget-s: must be positive`` (``renamed`` maps the fields whose flag is not their name)."""
    try:
        yield
    except SettingError as exc:
        raise UsageError(f"{flag_of(exc.field, renamed)}: {exc.problem}") from None
