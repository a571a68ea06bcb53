"""Time a backward spends waiting for the gradient all-reduce, per step: DDP launches the
all-reduce of a bucket as its gradients are ready, overlapped with the rest of the backward, and
waits for the last buckets at the backward's end. That tail, from the last gradient accumulated to
the end of ``backward()``, is the communication the compute did not hide (exposed); on a single
process it is next to nothing. Read from hooks the session already has: no comm hook of ours, so
the user's own comm hook and NCCL/gloo alike are left as they are."""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from pitstop.doctor.session import Consumer


class CommWatch(Consumer):
    """The backward's waiting tail per step (``waits_s``, measured steps only) and the DDP modules seen."""

    def __init__(self, excluded: Any) -> None:
        self.excluded = excluded
        self.waits_s: list[float] = []
        self.ddp: dict[str, Any] | None = None  # bucket_cap_mb and the flags of the first DDP root
        self._last_grad = 0.0
        self._step_wait = 0.0
        self._step = 0

    def on_root_forward_start(self, module: torch.nn.Module) -> None:
        if self.ddp is None and type(module).__name__ == "DistributedDataParallel":
            self.ddp = {"bucket_cap_mb": round(getattr(module, "bucket_bytes_cap", 0) / 2**20, 3),
                        "gradient_as_bucket_view": bool(getattr(module, "gradient_as_bucket_view", False)),
                        "static_graph": bool(getattr(module, "static_graph", False)),
                        "broadcast_buffers": bool(getattr(module, "broadcast_buffers", True))}

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        self._last_grad = time.perf_counter()

    def on_grad(self, param: torch.Tensor) -> None:
        self._last_grad = time.perf_counter()

    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None:
        self._step_wait += time.perf_counter() - self._last_grad

    def on_iteration(self, step: int) -> None:
        if not self.excluded(step):
            self.waits_s.append(self._step_wait)
        self._step_wait = 0.0

    def median_ms(self) -> float | None:
        return statistics.median(self.waits_s) * 1e3 if self.waits_s else None
