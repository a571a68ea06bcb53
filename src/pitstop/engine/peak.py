"""Memory measured exactly: bytes autograd saves for backward, and a call's peak above its baseline.

Never the difference of two noisy process-wide readings: activation bytes are counted tensor by
tensor through ``saved_tensors_hooks``; peak RSS uses the kernel's high-water mark after a reset
(``/proc/self/clear_refs``), in a worker process that runs nothing else; CUDA uses the
allocator's own peak counter."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from typing import Any

import torch


def storage_key(t: torch.Tensor) -> tuple[int, int] | None:
    try:
        storage = t.untyped_storage()
        return storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError):  # tensor subclasses without a plain storage
        return None


def activation_bytes(fn: Callable[[], Any], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes of tensors autograd saves for backward during ``fn()``, deduplicated by storage.

    Tensors whose storage is in ``exclude`` (parameters, buffers, inputs) are not activations."""
    excluded = {k[0] for k in map(storage_key, exclude) if k is not None}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = storage_key(t)
        if key is None:
            saved[id(t)] = t.numel() * t.element_size()
        elif key[0] not in excluded:
            saved[key[0]] = max(saved.get(key[0], 0), key[1])
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return sum(saved.values())


def _read_status(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # 5 = reset the peak RSS (VmHWM) to the current RSS
        return True
    except OSError:
        return False


def peak_bytes(fn: Callable[[], Any], device: torch.device) -> tuple[int | None, str]:
    """Peak memory of one call above the memory in use just before it, and how it was measured."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        cuda_base = torch.cuda.memory_allocated(device)
        out = fn()
        torch.cuda.synchronize(device)
        del out
        return torch.cuda.max_memory_allocated(device) - cuda_base, "cuda max_memory_allocated"
    if not _reset_peak_rss():
        return None, "unavailable: /proc/self/clear_refs cannot be written"
    base = _read_status("VmRSS")
    out = fn()
    peak = _read_status("VmHWM")
    del out
    if base is None or peak is None:
        return None, "unavailable: /proc/self/status unreadable"
    return max(0, peak - base), "peak RSS above the worker's baseline"
