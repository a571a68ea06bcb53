"""Clocks for the phase timeline: the host's wall clock on CPU, CUDA events on a GPU.

A clock's ``mark()`` is cheap and never synchronises: a CUDA mark records an event on the current
stream; the time between two marks is read once the later one has completed (``ready``), so
nothing waits for the device while the steps run."""

from __future__ import annotations

import time
from typing import Any


class WallClock:
    """``time.perf_counter``: a mark is a float, always ready."""

    device = "cpu"

    def mark(self) -> Any:
        return time.perf_counter()

    def ready(self, mark: Any) -> bool:
        return True

    def wait(self, mark: Any) -> None:
        """Nothing to wait for."""

    def seconds(self, start: Any, end: Any) -> float:
        return float(end - start)


class CudaClock:
    """CUDA events on the current stream: phases as the device runs them."""

    device = "cuda"

    def __init__(self) -> None:
        import torch

        self._event = torch.cuda.Event

    def mark(self) -> Any:
        event = self._event(enable_timing=True)
        event.record()
        return event

    def ready(self, mark: Any) -> bool:
        return bool(mark.query())

    def wait(self, mark: Any) -> None:
        """Wait for this one event (after the run: never a device-wide synchronisation)."""
        mark.synchronize()

    def seconds(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end)) / 1e3


def clock_for(module: Any) -> WallClock | CudaClock:
    """CUDA events when ``module`` has a parameter or buffer on a CUDA device, else the wall clock."""
    import torch

    for tensor in _tensors(module):
        if tensor.device.type == "cuda" and torch.cuda.is_available():
            return CudaClock()
        return WallClock()
    return WallClock()


def _tensors(module: Any) -> Any:
    yield from module.parameters()
    yield from module.buffers()
