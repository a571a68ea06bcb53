"""Argument types and the parser class shared by every command (no torch imported here)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

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
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value
    return parse


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
