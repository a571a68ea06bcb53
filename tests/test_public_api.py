import subprocess
import sys

import pitstop


def test_all_matches_the_lazy_table():
    # dir(pitstop) returns __all__, so compare with what __getattr__ can really resolve
    assert set(pitstop.__all__) == set(pitstop._LAZY) | {"__version__"}
    for name in pitstop.__all__:
        assert getattr(pitstop, name) is not None


def test_every_lazy_name_resolves_to_what_it_names():
    import importlib

    for name, (module, attr) in pitstop._LAZY.items():
        target = importlib.import_module(module)
        assert getattr(pitstop, name) is (target if attr is None else getattr(target, attr)), name


def test_capability_packages_are_the_functions_they_are_named_after():
    import torch

    import pitstop.bench.api
    import pitstop.doctor.api
    import pitstop.optimize.api  # importing a submodule first must not hide the function

    assert callable(pitstop.bench) and callable(pitstop.optimize)
    with pitstop.doctor() as doctor:
        model = torch.nn.Linear(2, 1)
        model(torch.ones(1, 2)).sum().backward()
    assert isinstance(doctor, pitstop.Doctor)
    assert pitstop.integrations.lightning.__name__ == "pitstop.doctor.adapters.lightning"


def test_import_is_cheap_and_never_touches_cuda_or_extras():
    code = (
        "import sys, pitstop\n"
        "assert 'torch' not in sys.modules, 'import pitstop imported torch'\n"
        "pitstop.bench, pitstop.optimize, pitstop.OptimizedModel\n"
        "import torch\n"
        "assert not torch.cuda.is_initialized()\n"
        "for extra in ('onnxruntime', 'onnx', 'transformers', 'torchao', 'lightning', 'matplotlib'):\n"
        "    assert extra not in sys.modules, extra\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_missing_extra_names_the_pip_command():
    import pytest

    from pitstop._optional import require
    from pitstop.errors import MissingExtraError

    with pytest.raises(MissingExtraError, match=r'pip install "pitstop\[onnx\]"'):
        _require_missing(require)


def _require_missing(require):
    from pitstop import _optional

    _optional.EXTRAS["pitstop_missing_module"] = "onnx"
    try:
        require("pitstop_missing_module", "ONNX Runtime")
    finally:
        del _optional.EXTRAS["pitstop_missing_module"]


def test_environment_record_has_what_comparisons_need():
    from pitstop._env import environment, physical_cores

    env = environment(threads=2, seed=7)
    for key in ("pitstop", "torch", "torch_git", "cpu", "cpu_flags", "physical_cores", "threads", "gpu",
                "onnxruntime", "seed", "allocator", "python"):
        assert key in env
    assert env["threads"] == 2 and env["seed"] == 7 and 1 <= physical_cores() == env["physical_cores"]
