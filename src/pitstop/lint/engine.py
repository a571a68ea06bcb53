"""Running the rules over files: discovery, ``[tool.pitstop.lint]`` configuration, ``# noqa``,
selection, and applying fixes (verified to parse, repeated until nothing changes)."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop.codes import CODES, lookup
from pitstop.errors import UsageError
from pitstop.lint.analysis import Module
from pitstop.lint.rules import RULES, Context, Diagnostic, Edit

DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
                   "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "*.egg-info")
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:\s*,\s*[A-Za-z0-9_\-]+)*))?", re.I)


@dataclass
class LintConfig:
    """Which codes run where: ``select``/``ignore`` take codes, names or prefixes (``PIT1``)."""

    select: list[str] = field(default_factory=list)  # empty = every code
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    source: str | None = None  # the pyproject.toml it came from

    def wants(self, code: str, path: str = "") -> bool:
        selected = not self.select or any(_matches(code, s) for s in self.select)
        ignored = any(_matches(code, s) for s in self.ignore)
        for pattern, codes in self.per_file_ignores.items():
            if _glob(path, pattern) and any(_matches(code, c) for c in codes):
                ignored = True
        return selected and not ignored

    def excluded(self, relative: Path, full: Path) -> bool:
        """``relative`` to the directory being walked (default excludes match its parts), ``full``
        as given on the command line (``exclude`` globs match either)."""
        return any(fnmatch.fnmatch(part, pat) for part in relative.parts for pat in (*DEFAULT_EXCLUDE, *self.exclude)) \
            or any(_glob(str(p), pat) for pat in self.exclude for p in (relative, full))


def _matches(code: str, key: str) -> bool:
    key = key.strip()
    if key.upper() == "ALL":
        return True
    c = CODES.get(code)
    return code.startswith(key.upper()) or (c is not None and c.name == key.lower())


def _glob(path: str, pattern: str) -> bool:
    path = path.replace(os.sep, "/")
    return fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, f"*/{pattern}") \
        or fnmatch.fnmatch(os.path.basename(path), pattern)


def _codes_option(values: Iterable[str], what: str) -> list[str]:
    out = []
    for v in values:
        for item in str(v).split(","):
            item = item.strip()
            if not item:
                continue
            if item.upper() != "ALL" and not any(_matches(c, item) for c in CODES):
                raise UsageError(f"{what}: {item!r} matches no code; use a code, a prefix (PIT1) or a name "
                                 f"(see `pitstop explain`)")
            out.append(item)
    return out


def load_config(start: Path, *, select: Iterable[str] = (), ignore: Iterable[str] = (),
                extend_exclude: Iterable[str] = ()) -> LintConfig:
    """``[tool.pitstop.lint]`` of the nearest pyproject.toml above ``start``; command-line
    ``select`` replaces the file's, ``ignore`` adds to it."""
    config = LintConfig()
    here = start.resolve()
    for folder in [here, *here.parents] if here.is_dir() else [here.parent, *here.parent.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            table = _read_toml(candidate).get("tool", {}).get("pitstop", {}).get("lint", {})
            if table:
                unknown = set(table) - {"select", "ignore", "per-file-ignores", "exclude"}
                if unknown:
                    raise UsageError(f"{candidate}: [tool.pitstop.lint] has unknown key(s) {', '.join(sorted(unknown))}"
                                     "; use select, ignore, per-file-ignores, exclude")
                _check_types(table, candidate)
                config = LintConfig(_codes_option(table.get("select", []), "select"),
                                    _codes_option(table.get("ignore", []), "ignore"),
                                    {k: _codes_option(v, f"per-file-ignores {k!r}")
                                     for k, v in table.get("per-file-ignores", {}).items()},
                                    list(table.get("exclude", [])), str(candidate))
            break
    select, ignore = _codes_option(select, "--select"), _codes_option(ignore, "--ignore")
    if select:
        config.select = select
    config.ignore += ignore
    config.exclude += list(extend_exclude)
    return config


def _check_types(table: dict[str, Any], path: Path) -> None:
    """``select``/``ignore``/``exclude`` are lists of strings, ``per-file-ignores`` a table of them."""
    def strings(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    for key in ("select", "ignore", "exclude"):
        if key in table and not strings(table[key]):
            raise UsageError(f"{path}: [tool.pitstop.lint] {key} must be a list of strings such as "
                             f"[\"PIT1\"], got {table[key]!r}")
    ignores = table.get("per-file-ignores", {})
    if not isinstance(ignores, dict) or not all(strings(v) for v in ignores.values()):
        raise UsageError(f"{path}: [tool.pitstop.lint] per-file-ignores must be a table of lists such as "
                         f"{{\"tests/*\" = [\"PIT501\"]}}, got {ignores!r}")


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read it as TOML ({exc}); fix the file or run from another directory") \
            from None


def discover(paths: Iterable[str], config: LintConfig) -> Iterator[Path]:
    """Python files under ``paths`` (explicit files always; directories walked, excludes applied)."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{raw!r} does not exist; give files or directories to lint")
        if not path.is_dir():  # a file, or a FIFO / device given by name (read_source says PIT001)
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not config.excluded(Path(root, d).relative_to(path), Path(root, d)))
            for name in sorted(files):
                full = Path(root, name)
                if name.endswith((".py", ".pyi")) and not config.excluded(full.relative_to(path), full):
                    yield full


@dataclass
class FileResult:
    path: str
    findings: list[Diagnostic]
    lines: int
    source: str | None = None  # kept when fixes may apply


def read_source(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it cannot be read)."""
    if path.exists() and not path.is_file():  # a FIFO named *.py would block the run forever
        return None, "not a regular file (a FIFO, socket or device); it was not read"
    try:
        with open(path, "rb") as f:
            encoding, _ = tokenize.detect_encoding(f.readline)
        return path.read_bytes().decode(encoding), None
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return None, f"cannot decode the file ({exc})"
    except OSError as exc:
        return None, f"cannot read the file ({exc.strerror})"


def write_source(path: Path, text: str) -> None:
    """Write fixed source back in the file's own encoding (its coding cookie, its UTF-8 BOM) and
    line endings (``read_source`` decoded bytes, so ``\\r\\n`` is still in ``text``)."""
    with open(path, "rb") as f:
        encoding, _ = tokenize.detect_encoding(f.readline)
    path.write_bytes(text.encode(encoding))


def lint_source(source: str, path: str, config: LintConfig | None = None) -> list[Diagnostic]:
    """Findings for one file's text, ``# noqa`` and the configuration applied, sorted by place."""
    config = config or LintConfig()
    try:
        tree = ast.parse(source, filename=path, type_comments=False)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        msg = getattr(exc, "msg", str(exc))
        found = [Diagnostic("PIT001", f"invalid syntax: {msg}; the file was not linted", line, col, line, col,
                            None, path)]
        return [d for d in found if config.wants(d.code, path)]
    except (RecursionError, MemoryError):
        return _unanalysable(path, config)
    lines = source.splitlines(keepends=True)
    try:
        ctx = Context(Module.of(tree, source), path, lines)
    except RecursionError:
        return _unanalysable(path, config)
    for rule_fn in RULES:
        try:
            rule_fn(ctx)
        except RecursionError:
            ctx.found.append(Diagnostic("PIT001", f"too deeply nested for {rule_fn.__name__}", 1, 1, 1, 1, None,
                                        path))
    kept = [d for d in ctx.found if config.wants(d.code, path) and not _suppressed(d, lines)]
    unique = {(d.code, d.line, d.col, d.message): d for d in kept}
    return sorted(unique.values(), key=lambda d: (d.line, d.col, d.code))


def _unanalysable(path: str, config: LintConfig) -> list[Diagnostic]:
    """PIT001 for a file too deeply nested to analyse; the other files' findings are kept."""
    found = [Diagnostic("PIT001", "too deeply nested to analyse (an expression thousands of terms deep); "
                        "the file was not linted", 1, 1, 1, 1, None, path)]
    return [d for d in found if config.wants(d.code, path)]


def _suppressed(d: Diagnostic, lines: list[str]) -> bool:
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


def lint_file(path: Path, config: LintConfig, keep_source: bool = False) -> FileResult:
    name = str(path)
    source, problem = read_source(path)
    if source is None:
        d = Diagnostic("PIT001", problem or "unreadable", 1, 1, 1, 1, None, name)
        return FileResult(name, [d] if config.wants("PIT001", name) else [], 0)
    findings = lint_source(source, name, config)
    return FileResult(name, findings, source.count("\n") + 1, source if keep_source else None)


# -- fixes ---------------------------------------------------------------------------------------


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


def fix_source(source: str, path: str, config: LintConfig, unsafe: bool, passes: int = 5
               ) -> tuple[str, list[Diagnostic]]:
    """The source with every applicable fix applied (each pass re-lints; a pass whose result does
    not parse is dropped), and the fixes that were applied."""
    applied: list[Diagnostic] = []
    for _ in range(passes):
        findings = lint_source(source, path, config)
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


def explain(key: str) -> str:
    """``pitstop explain CODE``: what it is, why it hurts, an example and what to write instead."""
    c = lookup(key)
    kinds = {"S": "lint", "R": "doctor", "SR": "lint and doctor"}[c.kinds]
    parts = [f"{c.code} {c.name} ({c.severity}; found by {kinds})", "", f"What: {c.summary}.", "",
             f"Fix: {c.fix}."]
    if c.example:
        parts += ["", "Example:", *("    " + ln for ln in c.example.splitlines())]
    if c.instead:
        parts += ["", "Use instead:", *("    " + ln for ln in c.instead.splitlines())]
    return "\n".join(parts)
