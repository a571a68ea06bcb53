"""Which codes run where: ``[tool.pitstop.lint]`` in pyproject.toml, ``--select``/``--ignore``
(codes, prefixes or names), per-file ignores, excludes, and file discovery."""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop.codes import CODES
from pitstop.errors import SettingError, UsageError

DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
                   "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "*.egg-info")


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


def _codes_option(values: Iterable[str], what: str, setting: bool = False) -> list[str]:
    """The codes of an option; one matching no code is an error naming ``what`` (a ``SettingError``
    for the ``select`` / ``ignore`` arguments, which the CLI names by flag; the pyproject table's own)."""
    out = []
    for v in values:
        for item in str(v).split(","):
            item = item.strip()
            if not item:
                continue
            if item.upper() != "ALL" and not any(_matches(c, item) for c in CODES):
                problem = f"{item!r} matches no code; use a code, a prefix (PIT1) or a name (see `pitstop explain`)"
                raise SettingError(what, problem) if setting else UsageError(f"{what}: {problem}")
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
    select, ignore = _codes_option(select, "select", True), _codes_option(ignore, "ignore", True)
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
