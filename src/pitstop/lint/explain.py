"""``pitstop explain``: generated from the code table (``pitstop.codes``) and, for the static codes,
from each rule's four-part docstring (What it does / Why is this bad / Example / Use instead)."""

from __future__ import annotations

import inspect
import re
import textwrap

from pitstop.codes import CODES, lookup
from pitstop.lint.rules import BY_CODE, Rule

SECTIONS = ("What it does", "Why is this bad", "Example", "Use instead")
_HEADER = re.compile(rf"^({'|'.join(SECTIONS)}):\s*$", re.M)
_KINDS = {"S": "lint", "R": "doctor", "SR": "lint and doctor"}


def docs(rule: type[Rule] | Rule) -> dict[str, str]:
    """A rule's docstring by section: prose joined into one paragraph, code dedented as written."""
    text = inspect.cleandoc((rule if isinstance(rule, type) else type(rule)).__doc__ or "")
    parts = _HEADER.split(text)
    found = {}
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        body = textwrap.dedent(body).strip("\n")
        found[title] = body if title in ("Example", "Use instead") else " ".join(body.split())
    return found


def explain(key: str) -> str:
    """What a code is, why it hurts, what finds it, an example and what to write instead."""
    c = lookup(key)
    rule = BY_CODE.get(c.code)
    parts = [f"{c.code} {c.name} ({c.severity}; found by {_KINDS[c.kinds]})", "", f"What: {c.summary}.", "",
             f"Fix: {c.fix}."]
    example, instead = c.example, c.instead
    if rule is not None:
        d = docs(rule)
        parts += ["", f"Why: {d['Why is this bad']}", "", f"Lint finds: {d['What it does']}"]
        example, instead = d["Example"], d["Use instead"]
    if example:
        parts += ["", "Example:", *("    " + ln for ln in example.splitlines())]
    if instead:
        parts += ["", "Use instead:", *("    " + ln for ln in instead.splitlines())]
    return "\n".join(parts)


def catalogue() -> list[str]:
    """``pitstop explain`` without a code: one line per code of the table."""
    return [f"{c.code}  {c.name:<26} {c.severity:<8} {'lint' if 'S' in c.kinds else '    '} "
            f"{'doctor' if 'R' in c.kinds else ''}".rstrip() for c in CODES.values()]


def static_codes_line() -> str:
    """The lint rule list of ``pitstop lint --help``: every static code with its name."""
    items = [f"{c.code} {c.name}" + (" (info)" if c.severity == "info" else "")
             for c in CODES.values() if "S" in c.kinds and c.code in BY_CODE and c.code != "PIT001"]
    return ", ".join(items)
