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


class ScriptParser(_Parser):
    """``pitstop COMMAND [OPTIONS] SCRIPT [ARGS]``: pitstop's own options after the script path are
    taken out of ARGS when unambiguous (the script does not define the same option), and
    everything after ``--`` goes to the script untouched. ``VALUED``: the command's options that
    take a value; ``FLAGS``: those that do not (both read from the parser's own options)."""

    @property
    def VALUED(self) -> tuple[str, ...]:
        return tuple(o for a in self._actions if a.nargs != 0 for o in a.option_strings if o.startswith("--"))

    @property
    def FLAGS(self) -> tuple[str, ...]:
        return tuple(o for a in self._actions if a.nargs == 0 for o in a.option_strings
                     if o.startswith("--") and o != "--help")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        tokens = list(args or [])
        at = self._script_index(tokens)
        if at is None:
            return super().parse_known_args(tokens, namespace)
        head, script, ours, theirs = tokens[:at], tokens[at], [], []
        if head[-1:] == ["--"]:
            head = head[:-1]
        rest, ours_after = iter(tokens[at + 1:]), self._after(script)
        for token in rest:
            name = token.split("=", 1)[0]
            if token == "--":
                theirs += list(rest)
            elif name in ours_after:
                if _defines(script, name):
                    self.error(f"{name} after the script path is ambiguous: {script} defines {name} too; put "
                               f"pitstop's {name} before the script path, or the script's after `--`")
                ours.append(token)
                if "=" not in token and name in self.VALUED:
                    ours.append(next(rest, ""))
            else:
                theirs.append(token)
        ns, extra = super().parse_known_args([*head, *ours, script], namespace)
        ns.args = theirs
        return ns, extra

    def _after(self, script: str) -> tuple[str, ...]:
        """The options that are pitstop's when they follow the script's path."""
        return (*self.VALUED, *self.FLAGS)

    def _script_index(self, tokens: list[str]) -> int | None:
        """Where the script path is among the arguments (None: not given)."""
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token == "--":
                return i + 1 if i + 1 < len(tokens) else None
            if not token.startswith("-") or token == "-":
                return i
            i += 2 if token in self.VALUED else 1
        return None


def _defines(script: str, option: str) -> bool:
    """Whether the script's source names ``option`` as a string (its own argparse option)."""
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            source = f.read()
    except OSError:
        return False
    return f'"{option}"' in source or f"'{option}'" in source
