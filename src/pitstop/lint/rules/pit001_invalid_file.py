"""PIT001 invalid-file: reported by the engine itself (a file that cannot be read, decoded or parsed
is never handed to the other rules)."""

from __future__ import annotations

from typing import ClassVar

from pitstop.lint.rules.base import Context, Rule


class InvalidFile(Rule):
    """What it does:
        Reports a file that does not parse or decode (a syntax error, bytes that are not valid in
        its declared encoding), or that is nested too deeply to analyse.

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
    variants: ClassVar[dict[str, str]] = {"unreadable": "{problem}", "nested": "too deeply nested for {rule}"}

    def check(self, ctx: Context) -> None:
        """Nothing to do on a file that parsed: the engine reports PIT001 before any rule runs."""
