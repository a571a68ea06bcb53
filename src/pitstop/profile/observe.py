"""What the verdict needs to know besides time: the run's settings and habits, read as it runs.

Each is read where it is cheap and exact: anomaly detection, a profiler left on and autocast at
every root forward (outside the drill-down's own window); the parameters' precision and device
once per root; the input shapes per step (fixed shapes: cudnn.benchmark pays off); each
optimizer's parameters and implementation once; ``zero_grad()`` without ``set_to_none`` from the
version counter of one parameter's gradient (zeroed in place between a step and the next
backward); a conv with a bias feeding a BatchNorm directly, from the leaf forwards of the first
two steps only (then that consumer unsubscribes: no per-module cost after). All of it over the
first steps only: these are habits of a script, set before its loop or kept through it."""

from __future__ import annotations

import statistics
import weakref
from typing import Any

import torch
from torch import nn

from pitstop.hooks.session import Consumer, Session

_CONV = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_BN = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


class Observations(Consumer):
    """The facts about the run that the causes in ``verdict`` test, read over the first ``STEPS``
    steps (then it unsubscribes: a long run's steps pay nothing for it)."""

    STEPS = 30

    def __init__(self, session: Session, in_window: Any = lambda step: False) -> None:
        self.session = session
        self.in_window = in_window  # step -> bool: the drill-down's own profiler is on
        self.anomaly = False
        self.autograd_profiler = False
        self.autocast = False
        self.forwards = 0
        self.params = {"fp32": 0, "low": 0}  # elements of the roots' parameters by precision
        self.device = "cpu"
        self.has_conv = False
        self.shapes: set[tuple[Any, ...]] = set()
        self.optimizers: list[dict[str, Any]] = []
        self.zero_in_place = False
        self.workers = 0
        self.dataset: str | None = None  # the DataLoader's Dataset class, and its batch size
        self.batch_size: int | None = None
        self.threads = torch.get_num_threads()
        self.conv_bias_bn: list[tuple[str, str]] = []
        self._roots: set[int] = set()
        self._described: set[int] = set()
        self._grad: tuple[Any, Any, int] | None = None  # (parameter, its gradient, version) after a step

    def on_data_start(self) -> None:
        it = self.session.data_iter() if self.session.data_iter is not None else None
        if it is not None and self.dataset is None:
            self.dataset = type(getattr(it, "_dataset", None)).__name__
            self.batch_size = getattr(getattr(it, "_index_sampler", None), "batch_size", None)
        self.workers = max(self.workers, int(getattr(it, "_num_workers", 0) or 0))

    def on_root_forward_start(self, module: nn.Module) -> None:
        self.forwards += 1
        self.anomaly = self.anomaly or torch.is_anomaly_enabled()
        if not self.in_window(self.session.step):
            self.autograd_profiler = self.autograd_profiler or torch.autograd.profiler._is_profiler_enabled
        self.autocast = self.autocast or torch.is_autocast_enabled("cpu") or torch.is_autocast_enabled("cuda")
        if id(module) not in self._roots:
            self._roots.add(id(module))
            self._describe_root(module)

    def on_root_forward(self, module: nn.Module, output: Any, grad_enabled: bool) -> None:
        if grad_enabled and len(self.shapes) < 64:
            args = self.session.last_inputs.get(id(module), ((), {}))[0]
            self.shapes.add(tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        self.anomaly = self.anomaly or torch.is_anomaly_enabled()
        if self._grad is not None:
            param, grad, version = self._grad
            self._grad = None
            p, g = param(), grad()
            if p is not None and g is not None and p.grad is g and g._version != version:
                self.zero_in_place = True

    def on_step_start(self, optimizer: torch.optim.Optimizer) -> None:
        if id(optimizer) not in self._described:
            self._described.add(id(optimizer))
            self.optimizers.append(describe_optimizer(optimizer, self.session.optimizer_label(optimizer)))

    def on_step_done(self, optimizer: torch.optim.Optimizer) -> None:
        if self.zero_in_place or self._grad is not None:
            return
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._grad = (weakref.ref(p), weakref.ref(p.grad), p.grad._version)
                    return

    def on_iteration(self, step: int) -> None:
        if step >= self.STEPS:
            self.threads = torch.get_num_threads()
            self.session.unsubscribe(self)

    def on_finish(self) -> None:
        self.threads = torch.get_num_threads()

    def _describe_root(self, module: nn.Module) -> None:
        for p in module.parameters():
            self.params["fp32" if p.dtype == torch.float32 else "low"] += p.numel()
            if p.device.type != "cpu":
                self.device = p.device.type
        self.has_conv = self.has_conv or any(isinstance(m, _CONV) for m in module.modules())

    @property
    def fixed_shapes(self) -> bool:
        return len(self.shapes) == 1


class FirstSteps(Consumer):
    """Leaf forwards of the first two steps: a conv with a bias whose output goes straight into a
    BatchNorm (the BatchNorm subtracts the mean: the bias is computed and thrown away)."""

    STEPS = 2

    def __init__(self, session: Session, observations: Observations) -> None:
        self.session = session
        self.observations = observations
        self._last: tuple[nn.Module, Any] | None = None

    def on_module_forward(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        last, self._last = self._last, (module, output)
        if (last is not None and isinstance(module, _BN) and isinstance(last[0], _CONV)
                and last[0].bias is not None and inputs and inputs[0] is last[1]):
            pair = (self.session.name_of(last[0]), self.session.name_of(module))
            if pair not in self.observations.conv_bias_bn:
                self.observations.conv_bias_bn.append(pair)

    def on_iteration(self, step: int) -> None:
        if step >= self.STEPS:
            self.session.unsubscribe(self)


def describe_optimizer(optimizer: torch.optim.Optimizer, label: str) -> dict[str, Any]:
    """Label, parameter count, median size and the implementation its step() will use."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    sizes = [p.numel() for p in params] or [0]
    defaults = optimizer.defaults
    on_device = bool(params) and all(p.device.type != "cpu" for p in params)
    if defaults.get("fused"):
        impl = "fused"
    elif defaults.get("foreach") or (defaults.get("foreach") is None and "foreach" in defaults and on_device):
        impl = "foreach"  # foreach=None picks foreach for device tensors (torch.optim's default)
    elif "foreach" in defaults or "fused" in defaults:
        impl = "for-loop"
    else:
        impl = "unknown"  # an optimizer without these options (not from torch.optim)
    return {"label": label, "params": len(params), "median_numel": int(statistics.median(sizes)), "impl": impl}
