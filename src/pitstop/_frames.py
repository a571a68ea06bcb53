"""Whose code a frame is: the user's own files, a library's (the standard library, site-packages:
Lightning, transformers, NumPy), or pitstop's and torch's (never shown). Sites are reported at the
deepest frame in the user's files, with the library frame that did the work after it:
``train.py:57 (via lightning/pytorch/utilities/apply_func.py:134)``."""

from __future__ import annotations

import os
import sysconfig
from functools import lru_cache

_LIBRARY = tuple(sorted({os.path.realpath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
                         if (p := sysconfig.get_paths().get(key))}, key=len, reverse=True))
_PITSTOP = os.path.dirname(os.path.realpath(__file__)) + os.sep


@lru_cache(maxsize=4096)
def kind_of(path: str) -> str:
    """``user``, ``library``, or ``hidden`` (pitstop, torch, the interpreter's frozen modules, runpy)."""
    if not path or path.startswith("<") or path.endswith(f"{os.sep}runpy.py"):
        return "hidden"
    real = os.path.realpath(path)
    if real.startswith(_PITSTOP) or real.startswith(_torch_dir()):
        return "hidden"
    if real.startswith(_LIBRARY) or any(f"{os.sep}{d}{os.sep}" in real for d in ("site-packages", "dist-packages")):
        return "library"
    return "user"


def is_user_file(path: str) -> bool:
    """Whether ``path`` is the user's own code."""
    return kind_of(path) == "user"


@lru_cache(maxsize=1)
def _torch_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    origin = spec.origin if spec is not None and spec.origin else ""
    return os.path.dirname(os.path.realpath(origin)) + os.sep if origin else "\0"


def short_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it; a library's from its
    package folder (``lightning/pytorch/...``)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    if not rel.startswith(".."):
        return rel
    for marker in ("site-packages", "dist-packages"):
        if f"{os.sep}{marker}{os.sep}" in path:
            return path.split(f"{os.sep}{marker}{os.sep}", 1)[1]
    return path


def site(user: tuple[str, int] | None, library: tuple[str, int] | None) -> str:
    """``user.py:LINE (via lib.py:LINE)``, or whichever of the two is known ("" when neither)."""
    shown = [f"{short_path(where[0])}:{where[1]}" for where in (user, library) if where]
    if user and library:
        return f"{shown[0]} (via {shown[1]})"
    return shown[0] if shown else ""
