"""The project modules the linted files import, found on disk beside them (``import vgg`` next to
``train.py``, ``from .utils import evaluate``): read and indexed for the cross-file facts (which
names are models, what a helper returns, who calls a function), never linted themselves. So
``pitstop lint train.py`` knows the models and helpers of the files it imports as ``pitstop lint .``
does, and reports on ``train.py`` alone."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path

MAX_FILES = 64  # imported files read beyond the linted ones: a script's own modules, not a library
MAX_ROUNDS = 2  # the files the linted ones import, and the files those import


def imported_modules(aliases: dict[str, str], stars: Iterable[str]) -> set[str]:
    """The modules a file imports, as written (``vgg``, ``models.resnet``, ``.utils``): each import's
    target and, for ``from a.b import C``, ``a.b.C`` (C may be a module or a name in ``a/b.py``)."""
    return {*aliases.values(), *stars}


def module_file(importer: Path, name: str, top: Path) -> Path | None:
    """The file that module ``name`` imported by ``importer`` is, when it lies in ``top`` (the folder
    the linted files share) or beside the importer: relative imports from the importer's package,
    absolute ones from its folder and each folder above it up to ``top``."""
    found = _module_file(os.path.dirname(str(importer)), name, str(top))
    return Path(found) if found is not None else None


@functools.lru_cache(maxsize=16384)
def _module_file(here: str, name: str, top: str) -> str | None:
    """``module_file`` on plain strings, once per folder and name (a folder's files import the same)."""
    level = len(name) - len(name.lstrip("."))
    parts = tuple(p for p in name.lstrip(".").split(".") if p)
    if not parts:
        return None
    if level:
        base = here
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases = [base]
    else:
        bases, cur = [here], here
        while cur != top and cur.startswith(top + os.sep):  # up to the folder the linted files share
            cur = os.path.dirname(cur)
            bases.append(cur)
    for base in bases:
        for k in range(len(parts), 0, -1):  # a.b.C: a/b/C.py, a/b/C/__init__.py, then a/b.py
            folder = os.path.join(base, *parts[:k - 1])
            if k > 1 and not _is_dir(folder):
                continue
            for candidate in (os.path.join(folder, parts[k - 1] + ".py"), os.path.join(folder, parts[k - 1],
                                                                                       "__init__.py")):
                if os.path.isfile(candidate):
                    return candidate
    return None


@functools.lru_cache(maxsize=16384)
def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


def forget() -> None:
    """Drop what the folders held: a later run reads the disk afresh (files may have come or gone)."""
    _module_file.cache_clear()
    _is_dir.cache_clear()


def to_read(importers: Iterable[tuple[Path, set[str]]], known: set[Path], top: Path | None) -> list[Path]:
    """The files ``importers`` (path, modules it imports) import that are not ``known`` yet (resolved paths)."""
    found: list[Path] = []
    for path in importers:
        where, modules = Path(os.path.realpath(path[0])), path[1]
        root = Path(os.path.realpath(top)) if top is not None else where.parent
        for name in sorted(modules):
            hit = module_file(where, name, root)
            if hit is not None and hit not in known:
                known.add(hit)
                found.append(hit)
    return found
