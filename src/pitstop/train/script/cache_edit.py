"""The item cache as edits of the user's files (``item_cache`` checks and fills it at run time):
``Cls.__getitem__ = functools.cache(Cls.__getitem__)`` on a line of its own after the Dataset's
class statement, and ``import functools`` where that file lacks it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from pitstop.train.script.source_edit import NotMechanical


def plan(config: Any, found: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    """The edits of a cache variant, as ``(what, file, line, text)``: the line after the Dataset's
    class (and ``import functools`` where its file lacks it); ``NotMechanical`` where the check said
    no, or where the items would be made by more than one worker, or by one that restarts every
    epoch."""
    sites = found.get("sites") or {}
    index = sites.get("train_loader")
    if index is None:
        raise NotMechanical("the training loop reads no torch DataLoader")
    loader = sites["loaders"][index]
    cache = loader.get("cache") or {"cannot": "its items were not checked"}
    if cache.get("cannot"):
        raise NotMechanical(f"the training Dataset's items are not cached: {cache['cannot']}")
    n = config.workers if config.workers is not None else int(loader.get("num_workers") or 0)
    if n > 1:
        raise NotMechanical(f"an item cache with {n} workers: each worker would keep the part it made, which grows "
                            "epoch by epoch and which pitstop did not measure (planned with no worker or one)")
    if n == 1 and config.workers is None and not loader.get("persistent_workers"):
        raise NotMechanical("the training DataLoader's worker restarts every epoch (persistent_workers=False): it "
                            "would start each epoch with an empty cache")
    changes = [("after-class", cache["file"], cache["line"], edit_line(cache))]
    if not binds_functools(Path(cache["file"]).read_text(encoding="utf-8")):
        changes.append(("after-imports", cache["file"], 1, "import functools"))
    return changes


def edit_line(cache: dict[str, Any]) -> str:
    """The line pitstop adds after the class."""
    name = cache["class"]
    return f"{name}.__getitem__ = functools.cache({name}.__getitem__)  # pitstop: its items are made once, then kept"


def after_class(text: str, line: int, new: str) -> str:
    """``new`` on the line after the top-level class statement that starts at ``line``."""
    tree = ast.parse(text)
    node = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.lineno == line), None)
    if node is None:
        raise NotMechanical(f"no class statement at line {line}")
    lines = text.splitlines(True)
    end = node.end_lineno or node.lineno
    if end <= len(lines) and not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    return "".join([*lines[:end], f"\n\n{new}\n", *lines[end:]])


def binds_functools(text: str) -> bool:
    """Whether the module imports ``functools`` at its top level under that name."""
    return any(isinstance(s, ast.Import) and any(a.name == "functools" and a.asname is None for a in s.names)
               for s in ast.parse(text).body)
