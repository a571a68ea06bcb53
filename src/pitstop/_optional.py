"""Optional dependencies, imported only when a feature needs them."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import re
import sys
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
    quiet_torchao()  # transformers imports torchao when it is installed
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


# torchao tries every ``_C*.so`` of its folder and logs one warning per file that fails to load
# (torchao/__init__.py: ``logger.warning(f"Failed to load {file}: {e}")``).
_TORCHAO_SO = re.compile(r"^Failed to load (?P<path>.*?[\\/]torchao[\\/]_C[^\\/]*?\.so): ")


class _UnloadableTorchaoBinary(logging.Filter):
    """Drops torchao's load warning for a binary that can never load in this process: built for
    another Python (``_C_mxfp8.cpython-310-...so`` under 3.11), or one of its CUDA-only kernel
    libraries (``_C_cutlass_90a``, ``_C_mxfp8``: torchao/csrc/cuda) under a CPU build of torch.
    Every other record passes: another torchao warning, or a binary that should have loaded (the
    same Python, and CUDA torch or a library that is not CUDA-only)."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = _TORCHAO_SO.match(record.getMessage())
        return found is None or not _cannot_load_here(os.path.basename(found["path"]))


def _cannot_load_here(name: str) -> bool:
    tag = re.search(r"\.(cpython-\d+)", name)
    if tag is not None and tag[1] != sys.implementation.cache_tag:
        return True
    torch = sys.modules.get("torch")  # torchao imports torch before it loads its binaries
    cpu_torch = torch is not None and getattr(torch.version, "cuda", None) is None
    return cpu_torch and re.match(r"_C_(cutlass|mxfp8)", name) is not None


class _TorchaoEnumRegistration(logging.Filter):
    """Drops torch's deprecation warning for an Enum registered with ``register_constant()``
    (torch/utils/_pytree.py: "<enum 'KernelPreference'> is an Enum subclass and is now natively
    supported by torch.compile ..."), only for torchao's own enums, which it registers on every
    import; the same warning about any other module's Enum passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("%s is an Enum subclass") or not record.args:
            return True
        cls = record.args[0] if isinstance(record.args, tuple) else None
        return not str(getattr(cls, "__module__", "")).startswith("torchao")


def quiet_torchao() -> None:
    """Silence torchao's warnings about binaries that cannot load here (see
    ``_UnloadableTorchaoBinary``) and torch's deprecation warnings about torchao's enums (see
    ``_TorchaoEnumRegistration``); call before torchao (or transformers, which imports it) is
    imported. Cheap and idempotent: it imports nothing."""
    for name, kind in (("torchao", _UnloadableTorchaoBinary), ("torch.utils._pytree", _TorchaoEnumRegistration)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())
