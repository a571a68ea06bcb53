"""Running the rules over one file: read and decode it, parse once, analyse, run every rule,
apply ``# noqa`` and the configuration."""

from __future__ import annotations

import ast
import tokenize
from dataclasses import dataclass
from pathlib import Path

from pitstop.lint.analysis import Module
from pitstop.lint.config import LintConfig
from pitstop.lint.noqa import suppressed
from pitstop.lint.rules import INVALID_FILE, RULES, Context, Diagnostic


@dataclass
class FileResult:
    path: str
    findings: list[Diagnostic]
    lines: int
    source: str | None = None  # kept when fixes may apply


def read_source(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it cannot be read)."""
    try:
        with open(path, "rb") as f:
            encoding, _ = tokenize.detect_encoding(f.readline)
        return path.read_bytes().decode(encoding), None
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return None, f"cannot decode the file ({exc})"
    except OSError as exc:
        return None, f"cannot read the file ({exc.strerror})"


def lint_source(source: str, path: str, config: LintConfig | None = None) -> list[Diagnostic]:
    """Findings for one file's text, ``# noqa`` and the configuration applied, sorted by place."""
    config = config or LintConfig()
    try:
        tree = ast.parse(source, filename=path, type_comments=False)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        msg = getattr(exc, "msg", str(exc))
        found = [Diagnostic("PIT001", INVALID_FILE.message.format(msg=msg), line, col, line, col, None, path)]
        return [d for d in found if config.wants(d.code, path)]
    lines = source.splitlines(keepends=True)
    ctx = Context(Module.of(tree, source), path, lines)
    for rule in RULES:
        if not config.wants(rule.code, path):
            continue
        try:
            rule.check(ctx)
        except RecursionError:
            message = INVALID_FILE.variants["nested"].format(rule=rule.name)
            ctx.found.append(Diagnostic("PIT001", message, 1, 1, 1, 1, None, path))
    kept = [d for d in ctx.found if config.wants(d.code, path) and not suppressed(d, lines)]
    unique = {(d.code, d.line, d.col, d.message): d for d in kept}
    return sorted(unique.values(), key=lambda d: (d.line, d.col, d.code))


def lint_file(path: Path, config: LintConfig, keep_source: bool = False) -> FileResult:
    name = str(path)
    source, problem = read_source(path)
    if source is None:
        message = INVALID_FILE.variants["unreadable"].format(problem=problem or "unreadable")
        d = Diagnostic("PIT001", message, 1, 1, 1, 1, None, name)
        return FileResult(name, [d] if config.wants("PIT001", name) else [], 0)
    findings = lint_source(source, name, config)
    return FileResult(name, findings, source.count("\n") + 1, source if keep_source else None)
