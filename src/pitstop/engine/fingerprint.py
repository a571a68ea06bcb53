"""Which model file a recipe was measured on: ``{path, sha256}`` of a model spec's source file, and
``check_source``, the function a recipe calls before it builds the model: a loud warning when the
file is not the one pitstop measured (the speed-up and the fidelity gate were measured on it)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

CHECK_SOURCE = '''

def check_source(path, sha256):
    """Warn loudly when the model's file is not the one pitstop measured."""
    import hashlib
    import warnings

    with open(path, "rb") as f:
        now = hashlib.sha256(f.read()).hexdigest()
    if now != sha256:
        warnings.warn(f"{path} changed since pitstop measured this recipe (sha256 {sha256[:12]}..., now "
                      f"{now[:12]}...): the speed-up and the fidelity gate were measured on the old model; "
                      "run pitstop again", RuntimeWarning, stacklevel=3)
'''


def fingerprint(path: str | Path) -> dict[str, str]:
    """``{path, sha256}`` of a model file (absolute path)."""
    resolved = Path(path).resolve()
    return {"path": str(resolved), "sha256": hashlib.sha256(resolved.read_bytes()).hexdigest()}


def spec_fingerprint(spec: Any) -> dict[str, str] | None:
    """The fingerprint of a ``ModelSpec``'s file: the file of ``path.py:factory``, the module file of
    ``package.module:factory``; None for the zoo (pitstop's own code) or a module with no file."""
    if spec.kind == "file":
        return fingerprint(spec.target)
    if spec.kind == "module":
        import importlib.util

        try:
            origin = getattr(importlib.util.find_spec(spec.target), "origin", None)
        except (ImportError, ValueError):
            return None
        return fingerprint(origin) if origin and Path(origin).is_file() else None
    return None


def check_call(print_: dict[str, str] | None, indent: str = "    ") -> str:
    """The recipe's line calling ``check_source`` (every value through repr), or ""."""
    return f"{indent}check_source({print_['path']!r}, {print_['sha256']!r})\n" if print_ else ""
