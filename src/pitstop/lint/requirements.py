"""The lowest torch version a project allows, read from its pyproject.toml, setup.cfg, setup.py or
requirements*.txt (the first folder at or above the linted path that has one of them)."""

from __future__ import annotations

import re
from pathlib import Path

_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
_TORCH = re.compile(r"(?<![\w.-])torch(?![\w.-])(?:\[[^\]]*\])?\s*\(?\s*"  # torch, torch[extra], torch (
                    r"(?P<spec>(?:(?:[<>=!~]=?|===)\s*[\w.*+]+\s*,?\s*)*)", re.I)
_CLAUSE = re.compile(r"(>=|==|~=|>|===)\s*(\d+(?:\.\d+)*)")


def project_root(start: Path) -> Path | None:
    """The first folder at or above ``start`` holding a pyproject.toml, setup.cfg, setup.py or requirements*.txt."""
    here = start.resolve()
    for folder in [here, *here.parents] if here.is_dir() else [here.parent, *here.parent.parents]:
        if any((folder / f).is_file() for f in _FILES) or any(folder.glob("requirements*.txt")):
            return folder
        if (folder / ".git").exists():
            return None
    return None


def torch_minimum(folder: Path | None) -> tuple[tuple[int, ...] | None, bool]:
    """(the lowest torch version allowed, whether torch is named at all) for the project in ``folder``.
    ``(None, True)``: torch is required without a lower bound, so any old version is allowed."""
    if folder is None:
        return None, False
    texts = []
    for path in [*(folder / f for f in _FILES), *sorted(folder.glob("requirements*.txt"))]:
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    named, lows = False, []
    for text in texts:
        for line in text.splitlines():
            line = line.split("#", 1)[0]
            for m in _TORCH.finditer(line):
                named = True
                bounds = [tuple(int(x) for x in v.split(".")) for _, v in _CLAUSE.findall(m.group("spec"))]
                lows.append(min(bounds) if bounds else ())
    if not lows:
        return None, named
    low = min(lows)
    return (low or None), True


class Requirements:
    """Each file's project torch requirement, each folder looked at once."""

    def __init__(self) -> None:
        self._roots: dict[Path, Path | None] = {}
        self._mins: dict[Path | None, tuple[int, ...] | None] = {}

    def torch_min(self, path: Path) -> tuple[int, ...] | None:
        """The lowest torch the file's project allows; ``(0,)`` when it names torch without a lower
        bound; None when it says nothing (or no project file was found)."""
        folder = path.resolve().parent
        if folder not in self._roots:
            self._roots[folder] = project_root(folder)
        root = self._roots[folder]
        if root not in self._mins:
            low, named = torch_minimum(root)
            self._mins[root] = low if low is not None else ((0,) if named else None)
        return self._mins[root]
