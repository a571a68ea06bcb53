"""Applying fixes: text edits, verified to parse, repeated until nothing changes."""

from __future__ import annotations

import ast

from pitstop.lint.config import LintConfig
from pitstop.lint.engine import lint_source
from pitstop.lint.project import View
from pitstop.lint.rules import Diagnostic, Edit


def apply_edits(source: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (later ones first); overlapping ones are left for a next pass."""
    out = source
    last_start = len(source) + 1
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if e.end > last_start:
            continue
        out = out[:e.start] + e.text + out[e.end:]
        last_start = e.start
    return out


def fix_source(source: str, path: str, config: LintConfig, unsafe: bool, passes: int = 5, view: View | None = None
               ) -> tuple[str, list[Diagnostic]]:
    """The source with every applicable fix applied (each pass re-lints; a pass whose result does
    not parse is dropped), and the fixes that were applied."""
    applied: list[Diagnostic] = []
    for _ in range(passes):
        findings = lint_source(source, path, config, view)
        todo = [d for d in findings if d.fix is not None and (d.fix.safe or unsafe)]
        if not todo:
            break
        candidate = apply_edits(source, [e for d in todo for e in d.fix.edits])  # type: ignore[union-attr]
        if candidate == source:
            break
        try:
            ast.parse(candidate)
        except (SyntaxError, RecursionError):
            break  # never write code that does not parse
        applied += todo
        source = candidate
    return source, applied
