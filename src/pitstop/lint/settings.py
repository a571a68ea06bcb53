"""Values a run is configured with, read from the YAML files beside the code: ``num_workers=
CONFIG.DATALOADER.NUM_WORKERS`` with ``CONFIG = OmegaConf.load(path)`` and ``DATALOADER:
NUM_WORKERS: 0`` in ``configs/voc12.yaml`` is 0 unless the user passes another file.

Only the plain subset of YAML that configs use is read (nested ``key: value`` mappings by
indentation; lists, anchors and flow collections are skipped), without a YAML library. An attribute
chain matches a key path that ends with the chain's names after its root (``hp.train.num_workers``:
``train.num_workers``); the value is known only where every match in every file agrees."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MAX_FILES = 40  # YAML files looked at around one linted file
MAX_BYTES = 200_000  # larger YAML files are data, not configuration
_CONFIG_NAMES = {"cfg", "config", "conf", "configs", "hp", "hps", "hparams", "hyperparams", "params", "settings"}


@dataclass(frozen=True)
class Setting:
    value: object
    path: str  # the YAML file, as found
    line: int


def _scalar(text: str) -> object:
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("null", "~", "none", ""):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip("'\"")


@lru_cache(maxsize=256)
def _read(path: str, stamp: tuple[int, int]) -> tuple[tuple[tuple[str, ...], object, int], ...]:
    """(key path, value, line) of every scalar in the file; ``stamp`` (mtime, size) keys the cache."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    found = []
    stack: list[tuple[int, str]] = []  # (indent, key) of the open mappings
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].rstrip()
        body = line.lstrip()
        if not body or body.startswith(("#", "-", "---", "...", "%")) or ":" not in body:
            continue
        indent = len(line) - len(body)
        key, _, rest = body.partition(":")
        key, rest = key.strip().strip("'\""), rest.strip()
        if not key or " " in key or rest.startswith(("&", "*", "[", "{", "|", ">")):
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if rest:
            found.append(((*(k for _, k in stack), key), _scalar(rest), number))
        else:
            stack.append((indent, key))
    return tuple(found)


def _yaml_files(start: Path) -> list[Path]:
    """YAML files in the linted file's folder and two folders up, and in their direct subfolders
    (``configs/voc12.yaml`` beside ``main.py``)."""
    found: list[Path] = []
    for folder in [start, *list(start.parents)[:2]]:
        for pattern in ("*.yaml", "*.yml", "*/*.yaml", "*/*.yml"):
            for p in sorted(folder.glob(pattern)):
                if p not in found and len(found) < MAX_FILES and not any(
                        x.startswith(".") for x in p.relative_to(folder).parts):
                    found.append(p)
        if (folder / ".git").exists() or any((folder / f).is_file() for f in ("pyproject.toml", "setup.py")):
            break
    return found


def config_value(expr: ast.AST, path: str) -> Setting | None:
    """What the configuration files near ``path`` set ``expr`` (an attribute chain or string
    subscripts: ``cfg.DATALOADER.NUM_WORKERS``, ``config["train"]["workers"]``) to, when they agree."""
    names: list[str] = []
    while True:
        if isinstance(expr, ast.Attribute):
            names.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) \
                and isinstance(expr.slice.value, str):
            names.append(expr.slice.value)
            expr = expr.value
        else:
            break
    if not names or not isinstance(expr, ast.Name) or expr.id in ("self", "cls"):
        return None
    chain = tuple(reversed(names))
    if len(chain) < 2 and expr.id.lower() not in _CONFIG_NAMES:
        return None  # ``args.workers``: a command-line option, not a key of any file here
    start = Path(path).resolve().parent
    if not start.is_dir():
        return None
    matches: list[Setting] = []
    for p in _yaml_files(start):
        try:
            st = p.stat()
        except OSError:
            continue
        if st.st_size > MAX_BYTES:
            continue
        matches += [Setting(value, str(p), line) for keys, value, line in _read(str(p), (st.st_mtime_ns, st.st_size))
                    if keys[-len(chain):] == chain]
    if not matches or any(m.value != matches[0].value for m in matches):
        return None
    return matches[0]
