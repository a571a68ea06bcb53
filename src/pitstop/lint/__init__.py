"""``pitstop lint``: the autograd mistakes of CODES.md found statically (the S codes), with fixes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pitstop.lint.engine import (
    FileResult,
    LintConfig,
    discover,
    explain,
    fix_source,
    lint_file,
    lint_source,
    load_config,
    write_source,
)
from pitstop.lint.rules import Diagnostic, Edit, Fix

__all__ = ["Diagnostic", "Edit", "Fix", "LintConfig", "LintResult", "explain", "lint", "lint_source"]


@dataclass
class LintResult:
    """Findings of every file, files and lines read, and (with fixes) what changed."""

    findings: list[Diagnostic] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    fixed: dict[str, int] = field(default_factory=dict)  # path -> fixes applied
    diffs: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)


def lint(paths: Iterable[str], *, select: Iterable[str] = (), ignore: Iterable[str] = (), exclude: Iterable[str] = (),
         fix: bool = False, unsafe_fixes: bool = False, diff: bool = False, keep_sources: bool = False) -> LintResult:
    """Lint files and directories; with ``fix`` write the fixes (``diff``: only show them)."""
    import difflib

    paths = list(paths) or ["."]
    config = load_config(Path(paths[0]), select=select, ignore=ignore, extend_exclude=exclude)
    result = LintResult()
    for path in discover(paths, config):
        res: FileResult = lint_file(path, config, keep_source=fix or diff or keep_sources)
        result.files += 1
        result.lines += res.lines
        if (fix or diff) and res.source is not None and any(d.fix for d in res.findings):
            new, applied = fix_source(res.source, res.path, config, unsafe_fixes)
            if new != res.source:
                result.fixed[res.path] = len(applied)
                if diff:
                    result.diffs.append("".join(difflib.unified_diff(
                        res.source.splitlines(keepends=True), new.splitlines(keepends=True),
                        fromfile=_label("a", res.path), tofile=_label("b", res.path))))
                else:
                    write_source(path, new)  # its own encoding, BOM and line endings
                    res = lint_file(path, config, keep_source=keep_sources)
                    res.source = res.source or new
        result.findings += res.findings
        if res.source is not None and keep_sources:
            result.sources[res.path] = res.source
    return result


def _label(side: str, path: str) -> str:
    return path if Path(path).is_absolute() else f"{side}/{path}"
