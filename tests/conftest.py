"""Shared test helpers."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def models_py() -> str:
    """Path of the fixture model file, for specs like f"{models_py}:tiny"."""
    return str(FIXTURES / "models.py")


# The modules that keep a worker of `pytest -n 2 --dist loadfile` busy longest (seconds of one worker
# at 16:10 on 2026-11-28, CONTRIBUTING.md), slowest first. xdist hands modules out in collection order,
# so these go first: collected alphabetically, the torchrun module came last and one worker ran it alone
# for 110 s after the other had finished. Re-measure with `--durations=0` when a module grows.
HEAVY_FIRST = (
    "tests/reliability/test_train_faults.py",  # 194 s
    "tests/train/test_train_script.py",  # 157 s
    "tests/train/test_train_torchrun.py",  # 153 s
    "tests/reliability/test_profile_faults.py",  # 69 s
    "tests/train/test_train_problems.py",  # 66 s
    "tests/train/test_train_input.py",  # 57 s (new since that measurement: alone, quiet)
    "tests/benchmarks/test_distributed_turns.py",  # 61 s
    "tests/optimize/test_optimize_run.py",  # 61 s
    "tests/bench/test_bench_run.py",  # 58 s
    "tests/optimize/test_fidelity_gate.py",  # 49 s
    "tests/report/test_report_command.py",  # 47 s
    "tests/test_cli.py",  # 47 s
    "tests/doctor/test_doctor_cli_runs.py",  # 47 s
    "tests/reliability/test_properties.py",  # 37 s
)


def _order(item) -> tuple[bool, int]:
    # the serial lane runs a test that loads every core after the ones that measure on a quiet machine
    # (a search right after the busy processes were killed measured bf16 within noise of fp32)
    loads_cores = bool(getattr(item.get_closest_marker("serial"), "kwargs", {}).get("loads_cores"))
    module = item.nodeid.split("::")[0]
    return loads_cores, HEAVY_FIRST.index(module) if module in HEAVY_FIRST else len(HEAVY_FIRST)


def pytest_collection_modifyitems(config, items):
    stale = [m for m in HEAVY_FIRST if not (Path(__file__).parents[1] / m).exists()]
    assert not stale, f"HEAVY_FIRST names modules that are gone: {stale}"
    items.sort(key=_order)  # stable: the tests of a module keep their order
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _ctrl_c_reaches_children():
    """Every test starts with SIGINT handled as in an interactive shell. A process started in the
    background by a non-interactive shell (``make test &``, ``nohup``) inherits SIGINT ignored,
    and so does every child it starts: the Ctrl-C tests' signal would then reach nothing."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
