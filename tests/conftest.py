"""Shared test helpers."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def models_py() -> str:
    """Path of the fixture model file, for specs like f"{models_py}:tiny"."""
    return str(FIXTURES / "models.py")


def pytest_collection_modifyitems(config, items):
    # the serial lane runs a test that loads every core after the ones that measure on a quiet machine
    # (a search right after the busy processes were killed measured bf16 within noise of fp32)
    items.sort(key=lambda item: bool(getattr(item.get_closest_marker("serial"), "kwargs", {}).get("loads_cores")))
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
