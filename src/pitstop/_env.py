"""The environment record every result carries, so results can be compared later."""

from __future__ import annotations

import os
import platform
import sys
from functools import lru_cache
from typing import Any

from pitstop._optional import version_of

# CPU features that decide which techniques can be fast here.
_FLAGS_OF_INTEREST = (
    "avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512_fp16",
    "amx_bf16", "amx_int8", "amx_tile", "fma", "f16c",
)


@lru_cache(maxsize=1)
def _cpuinfo() -> list[dict[str, str]]:
    """Parsed /proc/cpuinfo, one dict per logical CPU (empty where unavailable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            blocks = f.read().strip().split("\n\n")
    except OSError:
        return []
    cpus = []
    for block in blocks:
        entry = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            entry[key.strip()] = value.strip()
        cpus.append(entry)
    return cpus


def cpu_name() -> str:
    """The CPU model name."""
    cpus = _cpuinfo()
    return cpus[0].get("model name", platform.processor()) if cpus else platform.processor()


def cpu_flags() -> list[str]:
    """The CPU flags from ``_FLAGS_OF_INTEREST`` this machine has."""
    cpus = _cpuinfo()
    flags = set(cpus[0].get("flags", "").split()) if cpus else set()
    return [f for f in _FLAGS_OF_INTEREST if f in flags]


def native_bf16(device: str = "cpu", flags: list[str] | None = None) -> bool:
    """bf16 arithmetic in hardware: a CUDA GPU of compute capability 8.0 or later (Ampere on), or
    a CPU with AVX512-BF16 or AMX (``flags``: the CPU's, read here when not given). The one
    answer every capability uses: bf16 elsewhere is emulated, slower than fp32."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)
    return bool({"avx512_bf16", "amx_bf16"} & set(cpu_flags() if flags is None else flags))


def has_compiler() -> bool:
    """A C++ compiler for inductor's CPU kernels is on the PATH."""
    import shutil

    return any(shutil.which(c) for c in ("g++", "c++", "clang++"))


def physical_cores() -> int:
    """Physical cores usable by this process (hyper-threads not counted)."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    cores = {
        (c.get("physical id", "0"), c.get("core id", c.get("processor")))
        for c in _cpuinfo()
        if usable is None or int(c.get("processor", -1)) in usable
    }
    fallback = len(usable) if usable else (os.cpu_count() or 1)
    return max(1, len(cores) if cores else fallback)


def _allocator() -> str:
    """The malloc in use when preloaded (allocators change results a lot: docs/how-it-measures.md)."""
    preload = os.environ.get("LD_PRELOAD", "")
    for name in ("tcmalloc", "jemalloc", "mimalloc"):
        if name in preload:
            return name
    return "system"


def _gpu(torch: Any) -> dict[str, Any] | None:
    """GPU name, capability, memory and CUDA versions, without initialising CUDA if absent."""
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "memory_bytes": props.total_memory,
        "count": torch.cuda.device_count(),
        "cuda": torch.version.cuda,
        "driver": _nvidia_driver(),
    }


def _nvidia_driver() -> str | None:
    """The NVIDIA driver version from the kernel module, if readable."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            words = f.readline().split()
    except OSError:
        return None
    return next((w for w in words if w.count(".") >= 1 and w[0].isdigit()), None)


def environment(threads: int | None = None, seed: int | None = None) -> dict[str, Any]:
    """The full record: pitstop, Python, torch build, CPU, GPU, threads, seed, allocator."""
    import torch

    from pitstop import __version__

    return {
        "pitstop": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": str(torch.__version__),  # a str: TorchVersion unpickled elsewhere would import torch there
        "torch_git": getattr(torch.version, "git_version", None),
        "torch_debug": bool(torch.version.debug),
        "cuda_build": torch.version.cuda,
        "cpu": cpu_name(),
        "cpu_flags": cpu_flags(),
        "logical_cpus": os.cpu_count(),
        "physical_cores": physical_cores(),
        "threads": threads if threads is not None else torch.get_num_threads(),
        "quantized_engines": list(torch.backends.quantized.supported_engines),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "allocator": _allocator(),
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_") or k == "LD_PRELOAD"},
        "gpu": _gpu(torch),
        "onnxruntime": version_of("onnxruntime"),
        "seed": seed,
        "argv": sys.argv[1:] if sys.argv and sys.argv[0].endswith("pitstop") else None,
    }
