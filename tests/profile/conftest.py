"""One torch thread for the profile tests (a loaded 2-core machine makes two threads stall on each
other), and global state a planted script changes restored after each test."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread_and_restored_globals():
    threads, anomaly = torch.get_num_threads(), torch.is_anomaly_enabled()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    torch.autograd.set_detect_anomaly(anomaly)
