"""Optional dependencies, imported only when a feature needs them."""

from __future__ import annotations

import importlib
import importlib.metadata
from types import ModuleType

from pitstop.errors import MissingExtraError

# module name -> the extra that installs it
EXTRAS = {
    "onnxruntime": "onnx",
    "onnx": "onnx",
    "transformers": "zoo",
    "lightning": "lightning",
    "matplotlib": "plot",
}


def require(module: str, feature: str) -> ModuleType:
    """Import ``module`` or fail with the exact pip command that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(module.split(".")[0], "")
        cmd = f'pip install "pitstop[{extra}]"' if extra else f"pip install {module}"
        raise MissingExtraError(f"{feature} needs {module!r}, which is not installed: run {cmd}") from exc


def version_of(dist: str) -> str | None:
    """Installed version of a distribution, without importing it (None if absent)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
