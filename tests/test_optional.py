"""torchao's warnings about its binaries that cannot load here ("Failed to load .../torchao/_C_mxfp8
.cpython-310-...so", once per start of every process that imports transformers or torchao) are
silenced where pitstop imports them, and nothing else torchao logs is; so is torch's deprecation
warning about the enums torchao registers with ``register_constant()``, and only for torchao's."""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys

import pytest
import torch

from pitstop._optional import quiet_torchao

HAS_TORCHAO = importlib.util.find_spec("torchao") is not None
OTHER_PYTHON = "cpython-310" if sys.implementation.cache_tag != "cpython-310" else "cpython-312"


def _passes(message: str) -> bool:
    """Whether a warning of the ``torchao`` logger gets through once ``quiet_torchao()`` ran."""
    quiet_torchao()
    logger = logging.getLogger("torchao")
    record = logger.makeRecord("torchao", logging.WARNING, __file__, 1, message, None, None)
    return bool(logger.filter(record))


def test_a_binary_built_for_another_python_is_silenced():
    path = f"/env/site-packages/torchao/_C_mxfp8.{OTHER_PYTHON}-x86_64-linux-gnu.so"
    assert not _passes(f"Failed to load {path}: Could not load this library: {path}")


def test_cuda_kernels_under_a_cpu_torch_are_silenced_and_under_cuda_torch_they_are_shown(monkeypatch):
    path = "/env/site-packages/torchao/_C_cutlass_90a.abi3.so"
    message = f"Failed to load {path}: Could not load this library: {path}"
    monkeypatch.setattr(torch.version, "cuda", None)
    assert not _passes(message)
    monkeypatch.setattr(torch.version, "cuda", "12.6")
    assert _passes(message), "on a CUDA build the kernels should load: their failure is real"


def test_other_torchao_warnings_and_loadable_binaries_are_shown(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    ours = f"/env/site-packages/torchao/_C.{sys.implementation.cache_tag}-x86_64-linux-gnu.so"
    assert _passes(f"Failed to load {ours}: undefined symbol: _ZN3c10")  # our Python, not CUDA-only: real
    assert _passes("Skipping import of cpp extensions due to incompatible torch version.")
    assert _passes("Failed to load /env/site-packages/other/_C_mxfp8.cpython-310.so: nope")  # not torchao's


def test_quiet_torchao_adds_one_filter_however_often_it_runs():
    quiet_torchao()
    quiet_torchao()
    assert len(logging.getLogger("torchao").filters) == 1
    assert len(logging.getLogger("torch.utils._pytree").filters) == 1


def test_only_torchaos_enums_lose_the_register_constant_deprecation():
    import enum

    quiet_torchao()
    logger = logging.getLogger("torch.utils._pytree")
    message = "%s is an Enum subclass and is now natively supported by torch.compile as an opaque value type."

    def passes(module: str) -> bool:
        cls = enum.Enum("KernelPreference", "AUTO", module=module)
        return bool(logger.filter(logger.makeRecord(logger.name, logging.WARNING, __file__, 1, message, (cls,), None)))

    assert not passes("torchao.quantization.quantize_.common.kernel_preference")
    assert passes("my_project.kernels"), "the user's own Enum: their warning to read"
    assert bool(logger.filter(logger.makeRecord(logger.name, logging.WARNING, __file__, 1, "other %s", ("x",), None)))


@pytest.mark.skipif(not HAS_TORCHAO, reason='needs pip install "pitstop[quant]"')
@pytest.mark.parametrize("path", ["recipe", "zoo"])
def test_the_imports_pitstop_makes_print_no_load_failure(path):
    """The int8 recipe's torchao import and the zoo's transformers import, in a fresh process (where
    torchao 0.18's wheel next to a CPU torch on Python 3.11 printed two such lines each)."""
    imports = {"recipe": "from torchao.quantization import quantize_",
               "zoo": "import transformers; transformers.BertModel"}[path]
    if path == "zoo" and importlib.util.find_spec("transformers") is None:
        pytest.skip('needs pip install "pitstop[zoo]"')
    through = {"recipe": "from pitstop.bench.variants.handlers import build; from pathlib import Path; "
                         f"build({imports!r}, Path('recipe.py'))",
               "zoo": "from pitstop._optional import require; require('transformers', 'zoo:bert-base').BertModel"}
    ours = subprocess.run([sys.executable, "-c", through[path]], capture_output=True, text=True, timeout=300)
    assert ours.returncode == 0, ours.stderr
    assert "Failed to load" not in ours.stderr, ours.stderr
    assert "is an Enum subclass" not in ours.stderr, ours.stderr  # torch's deprecation about torchao's enums
