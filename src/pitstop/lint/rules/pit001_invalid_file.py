"""PIT001 invalid-file: reported by the engine itself (a file that cannot be read, decoded or parsed
is never handed to the other rules)."""

from __future__ import annotations

from typing import ClassVar

from pitstop.lint.rules.base import Context, Rule


class InvalidFile(Rule):
    """What it does:
        Reports a file that does not parse or decode (a syntax error, bytes that are not valid in
        its declared encoding), or that is nested too deeply to analyse: its syntax tree deeper than
        1000 levels (MAX_DEPTH in pitstop.lint.stack: a chain of about 1000 `+` or `.attr`), or
        refused by Python's parser. The verdict is the file's alone: the same from any caller.

    Why is this bad:
        Nothing in that file was checked; the other files are linted regardless, so a broken file
        could otherwise hide in a green run.

    Example:
        def f(:
            pass

    Use instead:
        def f(x):
            pass
    """

    code = "PIT001"
    name = "invalid-file"
    message = "invalid syntax: {msg}; the file was not linted"
    variants: ClassVar[dict[str, str]] = {"unreadable": "{problem}", "nested": "too deeply nested for {rule}",
                                          "deep": "nested {depth} levels deep, past the {limit} pitstop analyses "
                                                  "(split the expression); the file was not linted"}

    def check(self, ctx: Context) -> None:
        """Nothing to do on a file that parsed: the engine reports PIT001 before any rule runs."""
