"""``pitstop lint``: the autograd mistakes of ``pitstop.codes`` found statically (the S codes), with fixes."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pitstop.lint.config import LintConfig, discover, load_config
from pitstop.lint.engine import lint_files, lint_source, write_source
from pitstop.lint.explain import explain
from pitstop.lint.fix import fix_source
from pitstop.lint.rules import Diagnostic, Edit, Fix
from pitstop.lint.stack import at_fixed_depth

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
    """Lint files and directories; with ``fix`` write the fixes (``diff``: only show them). Run at a
    fixed stack depth (``pitstop.lint.stack``): a file's verdict does not depend on the caller."""
    return at_fixed_depth(lambda: _lint(paths, select, ignore, exclude, fix, unsafe_fixes, diff, keep_sources))


def _lint(paths: Iterable[str], select: Iterable[str], ignore: Iterable[str], exclude: Iterable[str], fix: bool,
          unsafe_fixes: bool, diff: bool, keep_sources: bool) -> LintResult:
    import difflib

    paths = list(paths) or ["."]
    config = load_config(Path(paths[0]), select=select, ignore=ignore, extend_exclude=exclude)
    result = LintResult()
    files = list(discover(paths, config))
    folders = [str(p.resolve() if p.is_dir() else p.resolve().parent) for p in map(Path, paths)]
    root = Path(os.path.commonpath(folders)) if folders else None  # module names are relative to it
    for res in lint_files(files, config, keep_source=fix or diff or keep_sources, root=root):
        result.files += 1
        result.lines += res.lines
        if (fix or diff) and res.source is not None and any(d.fix for d in res.findings):
            new, applied = fix_source(res.source, res.path, config, unsafe_fixes, view=res.view)
            if new != res.source:
                result.fixed[res.path] = len(applied)
                if diff:
                    result.diffs.append("".join(difflib.unified_diff(
                        res.source.splitlines(keepends=True), new.splitlines(keepends=True),
                        fromfile=_label("a", res.path), tofile=_label("b", res.path))))
                else:
                    write_source(Path(res.path), new)  # its own encoding, BOM and line endings
                    res.findings = lint_source(new, res.path, config, res.view)
                    res.source = new
        result.findings += res.findings
        if res.source is not None and keep_sources:
            result.sources[res.path] = res.source
    return result


def _label(side: str, path: str) -> str:
    return path if Path(path).is_absolute() else f"{side}/{path}"
