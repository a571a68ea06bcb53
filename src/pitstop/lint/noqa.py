"""``# noqa`` (everything), ``# noqa: PIT101`` or ``# noqa: stale-gradients`` on a finding's first
or last line."""

from __future__ import annotations

import re

from pitstop.codes import CODES
from pitstop.lint.rules import Diagnostic

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:\s*,\s*[A-Za-z0-9_\-]+)*))?", re.I)


def suppressed(d: Diagnostic, lines: list[str]) -> bool:
    """``# noqa`` (everything), ``# noqa: PIT101`` or ``# noqa: stale-gradients`` on the
    finding's first or last line."""
    for number in {d.line, d.end_line}:
        if not 0 < number <= len(lines) or "#" not in lines[number - 1]:
            continue
        m = NOQA.search(lines[number - 1])
        if m is None:
            continue
        if not m.group("codes"):
            return True
        for key in re.split(r"\s*,\s*", m.group("codes")):
            if key.upper() == d.code or (d.code in CODES and CODES[d.code].name == key.lower()):
                return True
    return False
