"""How close a training step is to this machine's limit: its FLOPs (``torch.utils.flop_counter``)
against the matmul peak measured here, per precision (MFU, as nanoGPT and torchtitan report it).

The peak is the best of several large square matmuls at the process's thread count: what this
machine's BLAS does on the ideal problem, not a datasheet figure. On a GPU, bursts of back-to-back
4096 and 8192 matmuls timed by CUDA events (one 1024 matmul is over in microseconds, less than the
host's timer and sync take: an H200 measured so read 109 of its ~790 bf16 TFLOP/s), in the process's
own float32 matmul precision (TF32 where the script allows it)."""

from __future__ import annotations

import time
from typing import Any

import torch

SIZES = (1024,)  # 2 GFLOP per fp32 matmul: a few ms on a laptop core, long enough to time
REPEATS = 8
CUDA_SIZES = (4096, 8192)
CUDA_BURST = 10  # matmuls between two events
CUDA_TRIALS = 5
WINDOW_S = 0.5  # per size: the fastest matmul over at least this long (a burst of other work passes)


def matmul_peak(dtype: torch.dtype, device: str = "cpu", sizes: tuple[int, ...] = SIZES, repeats: int = REPEATS,
                window_s: float = WINDOW_S) -> float:
    """FLOP/s of the fastest square matmul in ``dtype`` of each size in ``sizes``: after one warm-up,
    at least ``repeats`` of them and at least ``window_s`` seconds per size (the best over a window,
    so that a moment of other work on the cores does not set the peak)."""
    if device.startswith("cuda"):
        return _cuda_peak(dtype, device)
    best_rate = 0.0
    for size in sizes:
        a = torch.randn(size, size, device=device).to(dtype)
        b = torch.randn(size, size, device=device).to(dtype)
        best, timed, i = float("inf"), 0.0, 0
        while i <= repeats or timed < window_s:
            _sync(device)
            start = time.perf_counter()
            torch.mm(a, b)
            _sync(device)
            took = time.perf_counter() - start
            if i:
                best, timed = min(best, took), timed + took
            i += 1
            if timed > 4 * window_s:  # a slow device: enough
                break
        best_rate = max(best_rate, 2.0 * size**3 / best)
    return best_rate


def _cuda_peak(dtype: torch.dtype, device: str, sizes: tuple[int, ...] = CUDA_SIZES) -> float:
    """FLOP/s of the fastest burst of ``CUDA_BURST`` matmuls, timed by CUDA events, over the sizes
    that fit in the device's free memory (a size that does not is left out)."""
    best_rate = 0.0
    for size in sizes:
        try:
            a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
            out = torch.mm(a, b)  # the warm-up (cuBLAS picks its kernel)
        except torch.cuda.OutOfMemoryError:
            continue
        for _ in range(CUDA_TRIALS):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(CUDA_BURST):
                torch.mm(a, b, out=out)
            end.record()
            end.synchronize()
            best_rate = max(best_rate, CUDA_BURST * 2.0 * size**3 / (start.elapsed_time(end) / 1e3))
        del a, b, out
    return best_rate


def machine(device: str = "cpu") -> dict[str, Any]:
    """The matmul peaks (fp32 and, where native, bf16) and the facts the gates need."""
    from pitstop._env import has_compiler, native_bf16, physical_cores

    native = native_bf16(device)
    peaks = {"fp32": matmul_peak(torch.float32, device)}
    if native:
        peaks["bf16"] = matmul_peak(torch.bfloat16, device)
    return {"peak_flops": peaks, "native_bf16": native, "threads": torch.get_num_threads(),
            "compiler": has_compiler(), "physical_cores": physical_cores()}


def mfu(flops_per_step: float | None, step_s: float | None, precision: str, peaks: dict[str, float]
        ) -> dict[str, Any] | None:
    """Achieved FLOP/s and its share of the peak in the variant's precision (None when unknown)."""
    if not flops_per_step or not step_s or step_s <= 0:
        return None
    kind = "bf16" if precision.startswith("bf16") else "fp32"
    peak, achieved = peaks.get(kind), flops_per_step / step_s
    used = {"flops_per_step": flops_per_step, "achieved_flops": achieved, "peak_flops": peak,
            "precision": kind, "fraction": achieved / peak if peak else None}
    if peak and achieved > peak:  # above what a matmul reached here: the peak was measured low (a busy moment)
        used["fraction"] = None
        used["note"] = "the step's FLOP/s exceed the measured matmul peak: the peak was measured low; no MFU"
    return used


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
