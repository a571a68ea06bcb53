"""The gradient all-reduce of a DDP job, per step: how long the collectives took, how much of that
the backward hid, and how long the backward waited for them at its end.

- **exposed** (``waits_s``): DDP launches the all-reduce of a bucket as its gradients are ready,
  overlapped with the rest of the backward, and waits for the last buckets at the backward's end.
  That tail, from the last gradient accumulated to the end of ``backward()``, is the communication
  the compute did not hide; on a single process it is next to nothing. Read from the session's
  hooks, whatever runs the collectives.
- **total and overlapped** (``comm_s``, ``overlap_s``), two ways:
  - on CPU (gloo), **DDP's own timers**: the reducer stamps each iteration's first bucket launch,
    its last gradient and the end of its wait for the buckets (what
    ``DistributedDataParallel._get_ddp_logging_data()`` reports); pitstop asks for every iteration
    (``_set_ddp_runtime_logging_sample_rate(1)``, left at DDP's default under
    ``TORCH_DISTRIBUTED_DEBUG=DETAIL``, which logs each sample) and reads the stamps at the next
    forward, in C++ and with no hook of its own: the job's all-reduce runs exactly as DDP runs it,
    a comm hook of the job's own (PowerSGD, fp16 compression) included. The communication is the
    span from the first launch to the end of the wait, its part before the last gradient what the
    backward overlapped. (A Python comm hook costs a gloo job ~2.5% of its step: a second pass over
    the bucket to average it, which DDP's built-in path folds into its copy, and a callback taking
    the GIL on gloo's thread.)
  - on CUDA, where DDP's timers are CUDA events that its next forward would wait for, each
    bucket's all-reduce timed from its launch to its completion by a DDP communication hook that
    does what DDP's own ``allreduce_hook`` does (the same sum and average, on the job's process
    group), its one completion callback also noting the time; the union of those intervals is the
    step's communication, its part before the last gradient what the backward overlapped. The hook
    is registered at the first backward of a DDP module that has none, so a job's own comm hook
    (registered before any backward, as DDP requires) is left as it is, and then only the exposed
    tail is measured. The completion is when the NCCL work is done on its stream."""

from __future__ import annotations

import os
import statistics
import threading
import time
import weakref
from typing import Any

import torch

from pitstop.hooks.session import Consumer


class CommWatch(Consumer):
    """Per measured step: the backward's waiting tail (``waits_s``), the all-reduce time
    (``comm_s``) and the part of it the backward overlapped (``overlap_s``); the DDP module seen."""

    def __init__(self, excluded: Any) -> None:
        self.excluded = excluded
        self.waits_s: list[float] = []
        self.comm_s: list[float] = []
        self.overlap_s: list[float] = []
        self.ddp: dict[str, Any] | None = None  # bucket_cap_mb and the flags of the first DDP root
        self.timed: bool | None = None  # None: not decided; True: DDP's timers (CPU) or the comm hook (CUDA);
        # False: a CUDA job with a comm hook of its own
        self._module: weakref.ref[torch.nn.Module] | None = None
        self._intervals: list[tuple[float, float]] = []  # (launched, completed) of this step's buckets
        self._lock = threading.Lock()  # gloo completes a bucket's work on its own thread
        self._last_grad = 0.0
        self._backward_start: float | None = None
        self._grads_done = 0.0  # the last gradient of the step's backwards
        self._step_wait = 0.0
        self._timers = False  # DDP's own timers (CPU), not the comm hook
        self._stamp = 0  # the last iteration's first bucket launch read from them (ns)
        self._last_step = 0  # the last completed step (the timers are read one step later)

    def on_root_forward_start(self, module: torch.nn.Module) -> None:
        if self.ddp is None and type(module).__name__ == "DistributedDataParallel":
            self.ddp = {"bucket_cap_mb": round(getattr(module, "bucket_bytes_cap", 0) / 2**20, 3),
                        "gradient_as_bucket_view": bool(getattr(module, "gradient_as_bucket_view", False)),
                        "static_graph": bool(getattr(module, "static_graph", False)),
                        "broadcast_buffers": bool(getattr(module, "broadcast_buffers", True))}
            self._module = weakref.ref(module)
            self._use_timers(module)

    def on_root_forward(self, module: torch.nn.Module, output: Any, grad_enabled: bool) -> None:
        if self._timers and self._module is not None and self._module() is module:
            self._read_timers(module)

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        self._last_grad = time.perf_counter()
        if self._backward_start is None:
            self._backward_start = self._last_grad
        if self.timed is None and self._module is not None:
            self._time_buckets()  # CUDA: the timing comm hook

    def on_grad(self, param: torch.Tensor) -> None:
        self._last_grad = time.perf_counter()

    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None:
        self._step_wait += time.perf_counter() - self._last_grad
        self._grads_done = self._last_grad

    def on_iteration(self, step: int) -> None:
        with self._lock:
            intervals, self._intervals = self._intervals, []
        if not self.excluded(step):
            self.waits_s.append(self._step_wait)
            if self.timed and intervals:
                total, hidden = _union(intervals), _union(intervals, until=self._grads_done)
                self.comm_s.append(total)
                self.overlap_s.append(hidden)
        self._step_wait, self._backward_start, self._last_step = 0.0, None, step

    def median_ms(self) -> float | None:
        return statistics.median(self.waits_s) * 1e3 if self.waits_s else None

    def comm(self) -> dict[str, Any] | None:
        """The all-reduce per step: ``ms`` (median), ``overlapped`` (share of it before the last
        gradient, over the measured steps), ``exposed_ms`` (the backward's waiting tail); None when
        the collectives were not timed (no DDP module, or the job's own comm hook)."""
        if not self.comm_s:
            return None
        total = sum(self.comm_s)
        return {"ms": statistics.median(self.comm_s) * 1e3,
                "overlapped": sum(self.overlap_s) / total if total > 0 else None,
                "exposed_ms": self.median_ms(), "steps": len(self.comm_s)}

    def _use_timers(self, module: Any) -> None:
        """On CPU: DDP's own timers, every iteration (see the module's docstring), instead of a hook."""
        if any(p.device.type != "cpu" for p in module.parameters()) or not hasattr(module, "logger"):
            return
        try:
            if os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() != "DETAIL":  # DETAIL logs every sample
                module._set_ddp_runtime_logging_sample_rate(1)
        except (RuntimeError, AttributeError, ValueError):
            return
        self._timers = self.timed = True

    def _read_timers(self, module: Any) -> None:
        """The stamps DDP's forward just set for the last iteration with an all-reduce (a new first
        launch: an iteration under ``no_sync`` or without backward sets none), counted for its step."""
        try:
            ints = module.logger._get_ddp_logging_data().ints_map
        except (RuntimeError, AttributeError):
            return
        start, end = ints.get("backward_comm_time_start", 0), ints.get("backward_comm_time_end", 0)
        compute_end = ints.get("backward_compute_time_end", 0)
        if start <= 0 or end <= start or start == self._stamp:
            return
        self._stamp = start
        if not self.excluded(self._last_step):
            self.comm_s.append((end - start) / 1e9)
            self.overlap_s.append(max(0, min(compute_end, end) - start) / 1e9)

    def _time_buckets(self) -> None:
        """Register the timing comm hook on the DDP module, unless it already has a comm hook."""
        module: Any = self._module() if self._module is not None else None
        if module is None or getattr(module, "_comm_hooks", None) or not hasattr(module, "register_comm_hook"):
            self.timed = False
            return
        import torch.distributed as dist

        watch = weakref.ref(self)

        def pitstop_timed_allreduce(state, bucket):
            # DDP's own allreduce_hook (torch.distributed.algorithms.ddp_comm_hooks.default_hooks:
            # divide by the group's size, then all-reduce the bucket on the job's group), with its
            # completion callback and ours merged into one: each Python callback takes the GIL on the
            # collective's thread (gloo's run loop), a cost DDP's built-in path does not have.
            # No annotations: DDP checks a hook's annotations against its own classes.
            launched = time.perf_counter()
            tensor = bucket.buffer().div_(dist.get_world_size(state))  # state: the job's group (None: the default)

            def completed(done: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
                me = watch()
                if me is not None:
                    with me._lock:
                        me._intervals.append((launched, time.perf_counter()))
                return done.value()[0]

            return dist.all_reduce(tensor, group=state, async_op=True).get_future().then(completed)

        try:
            module.register_comm_hook(getattr(module, "process_group", None), pitstop_timed_allreduce)
            self.timed = True
        except (RuntimeError, AssertionError, ValueError):  # a hook of its own after all, or a DDP that takes none
            self.timed = False


def _union(intervals: list[tuple[float, float]], until: float | None = None) -> float:
    """Seconds covered by the union of ``intervals`` (each cut at ``until`` when given)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if until is not None:
            b = min(b, until)
        if b <= a:
            continue
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total
