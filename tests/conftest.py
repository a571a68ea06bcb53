"""Shared test helpers."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def models_py() -> str:
    """Path of the fixture model file, for specs like f"{models_py}:tiny"."""
    return str(FIXTURES / "models.py")


# The modules that keep a worker of `pytest -n 2 --dist loadfile` busy longest (seconds of one worker
# in the clean run of 5b7281b at 07:15 on 2026-11-29, load 2.2-2.7; the torchrun module as measured after
# its ranks became forks and the FSDP test too), slowest first. xdist hands modules out in collection
# order, so these go first: collected alphabetically, the torchrun module came last and one worker ran
# it alone for 110 s after the other had finished. Re-measure with `--durations=0` when a module grows.
HEAVY_FIRST = (
    "tests/train/test_train_script.py",  # 190 s
    "tests/reliability/test_train_faults.py",  # 126 s
    "tests/train/test_item_cache.py",  # ~72 s alone (two cache searches; 2026-12-01, a slower machine)
    "tests/train/test_train_torchrun.py",  # ~75 s (63 s alone)
    "tests/reliability/test_profile_faults.py",  # 66 s
    "tests/reliability/test_properties.py",  # 50 s
    "tests/report/test_report_command.py",  # 44 s
    "tests/train/test_train_input.py",  # 44 s
    "tests/doctor/test_doctor_cli_runs.py",  # 41 s
    "tests/train/test_train_problems.py",  # 39 s
    "tests/benchmarks/test_distributed_turns.py",  # 38 s
    "tests/optimize/test_optimize_run.py",  # 35 s
    "tests/train/test_train_payback.py",  # ~33 s (the short script's compile search)
    "tests/bench/test_bench_run.py",  # 32 s
    "tests/test_cli.py",  # 32 s
    "tests/generate/test_generate_cli.py",  # 28 s
)


def _order(item) -> tuple[bool, int]:
    # the serial lane runs a test that loads every core after any that would measure on a quiet machine
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
