"""Minor page faults per training step, and what one costs on this machine.

A step whose large temporaries the C allocator maps afresh and hands back to the kernel when they
are freed (glibc's malloc does so for every block over its mmap threshold, a threshold it moves as
the process frees blocks) takes a minor page fault for every 4 KiB page it touches, each page zeroed
by the kernel. The same CPU job on this project's VM took 0 to ~3,600 faults a step from one run to
the next, and its CPU time per step followed them (22 ms without, 30 ms with ~2,500); holding the
allocator in one state (``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``) took them away.

The count is the process's own (``getrusage``: all its threads, not its DataLoader workers), read
at every step's end. The cost of one fault is measured here, once per process, by mapping fresh
anonymous pages, writing them once and unmapping them (the write's own cost, a second write of
the same pages, taken off): what a mapped temporary costs per page. Their product is an estimate of
the time the faults take, from two measured figures; the verdict says so."""

from __future__ import annotations

import mmap
import statistics
import time

try:
    import resource
except ImportError:  # Windows: no getrusage
    resource = None  # type: ignore[assignment]

PAGES = 2048  # 8 MiB of 4 KiB pages per sample
REPEATS = 9
HOLD = {"MALLOC_MMAP_THRESHOLD_": "268435456", "MALLOC_TRIM_THRESHOLD_": "1073741824"}  # 256 MiB, 1 GiB


def minor_faults() -> int | None:
    """The process's minor page faults so far (None where ``getrusage`` does not exist: Windows)."""
    return None if resource is None else resource.getrusage(resource.RUSAGE_SELF).ru_minflt


_cost_us: float | None = None


def fault_cost_us() -> float | None:
    """Microseconds one minor fault of a fresh anonymous page costs here: map, first write and unmap
    per page, less the write's own cost per page (the median of ``REPEATS`` samples; measured once)."""
    global _cost_us
    if _cost_us is None and minor_faults() is not None:
        size = PAGES * mmap.PAGESIZE
        data = b"\x01" * size
        samples = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            region = mmap.mmap(-1, size)
            region.write(data)  # first write: a fault per page, each page zeroed
            written = time.perf_counter()
            region.seek(0)
            region.write(data)  # the same write to mapped pages: its own cost
            again = time.perf_counter()
            region.close()
            end = time.perf_counter()
            samples.append(((written - start) - (again - written) + (end - again)) / PAGES)
        _cost_us = max(statistics.median(samples), 0.0) * 1e6
    return _cost_us


def summary(per_step: list[int], step_ms: float | None, calibrate: bool = True) -> dict[str, float | None] | None:
    """``{"per_step", "us_each", "ms_per_step", "share"}`` over the measured steps' fault counts:
    the median count, one fault's measured cost (only where there are faults to cost: at least 1 a
    step), the estimated time they take and its share of the median step (at most 1: the estimate
    can exceed the step it is part of). None: not counted. ``calibrate=False`` (a snapshot of a run
    still going): the cost only if already measured, never measured now: its ~0.1 s of mapping and
    writing pages would land in one of the script's steps (and, under DDP, every rank's)."""
    if not per_step:
        return None
    median = statistics.median(per_step)
    cost = (fault_cost_us() if calibrate else _cost_us) if median >= 1 else None
    ms = median * cost / 1e3 if cost is not None else None
    return {"per_step": median, "us_each": cost, "ms_per_step": ms,
            "share": min(ms / step_ms, 1.0) if ms is not None and step_ms else None}
