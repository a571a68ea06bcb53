"""The doctor's instrumentation: PyTorch's own hooks turned into events for the checks.

Hooks used (all removed by ``detach``):
- global module forward pre/post hooks (``register_module_forward_pre_hook`` /
  ``register_module_forward_hook``): which modules are roots (called from outside any module),
  a root's last inputs (for replaying a forward whose loss came out non-finite), and per-module
  events for the checks that ask for them;
- global optimizer step pre/post hooks (``register_optimizer_step_pre_hook`` / ``..._post_hook``):
  steps, gradient norms, guard mode;
- ``register_post_accumulate_grad_hook`` on every parameter of a root or an optimizer: gradients
  as they are accumulated, in backward order;
- a thin wrapper of ``torch.autograd.backward`` (``Tensor.backward`` calls it): the tensors
  backward runs on, its arguments and the user's source line;
- a prehook on graph nodes (``Node.register_prehook``) holding a sentinel object whose lifetime is
  the node's: weak references to sentinels tell which graphs are still alive and whether a later
  backward used them, without scanning memory;
- ``_BaseDataLoaderIter.__next__`` timing: how long each step waits for its batch.

Cheap by default: gradient norms and loss values stay on the device and are read every
``sync_every`` steps (1 on CPU, where reading costs nothing; 50 on CUDA). Expensive localisation
(finiteness of every module output) runs only once a problem has been seen."""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.optim import optimizer as _optim
from torch.utils.data import dataloader as _dataloader

from pitstop.codes import CODES

_SKIP_FILES = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)), "<frozen ")


def user_site(skip: int = 2) -> str:
    """``file.py:LINE`` of the innermost caller outside torch and pitstop ("" when none)."""
    frame = sys._getframe(skip)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_SKIP_FILES) and "/runpy.py" not in path:
            return f"{_short(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


@dataclass
class Finding:
    """One mistake, deduplicated by (code, where); ``count`` = how many steps it was seen in."""

    code: str
    where: str
    message: str
    step: int | None = None  # first step seen (1-based)
    count: int = 1
    fix: str | None = None  # None: the catalogue's fix
    ranks: list[int] = field(default_factory=list)
    last_step: int | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return CODES[self.code].name

    @property
    def severity(self) -> str:
        return CODES[self.code].severity

    def to_dict(self) -> dict[str, Any]:
        """The JSON finding of PRODUCT.md."""
        d = {"code": self.code, "name": self.name, "severity": self.severity, "message": self.message,
             "where": self.where, "fix": self.fix or CODES[self.code].fix, "step": self.step, "count": self.count}
        if self.ranks:
            d["ranks"] = self.ranks
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(d["code"], d["where"], d["message"], d.get("step"), d.get("count", 1), d.get("fix"),
                   list(d.get("ranks", [])))


class Sentinel:
    """Held by a graph node's prehook: alive exactly as long as the node; records the steps in
    which a backward ran through the node."""

    __slots__ = ("__weakref__", "group", "kind", "site", "step", "used")

    def __init__(self, kind: str, step: int, site: str) -> None:
        self.kind, self.step, self.site = kind, step, site
        self.used: list[int] = []  # steps whose backward executed the node
        self.group: Any = None  # told when used

    def __call__(self, grad_outputs: Any) -> None:
        step = _CURRENT_STEP[0]
        if not self.used or self.used[-1] != step:
            self.used.append(step)
        if self.group is not None:
            self.group.used = True


_CURRENT_STEP = [1]  # the attached doctor's step, read by sentinels (one doctor at a time)
MODE_DEPENDENT = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd, nn.modules.instancenorm._InstanceNorm)


class Check:
    """A framework-agnostic check: override the ``on_<event>`` methods it needs (the others are
    never called). ``self.doctor`` gives steps, names and ``found``."""

    code = ""
    codes: tuple[str, ...] = ()  # every code it reports, when more than ``code``
    doctor: Doctor

    def on_root_forward(self, module: nn.Module, output: Any, grad: bool) -> None: ...
    def on_module_forward(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None: ...
    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool,
                    site: str) -> None: ...
    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None: ...
    def on_grad(self, param: torch.Tensor) -> None: ...
    def on_step(self, optimizer: torch.optim.Optimizer) -> None: ...
    def on_step_done(self, optimizer: torch.optim.Optimizer) -> None: ...
    def on_iteration(self, step: int) -> None: ...
    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None: ...
    def on_loss(self, step: int, value: float, site: str) -> None: ...
    def on_data(self, wait_s: float) -> None: ...
    def on_sync(self) -> None: ...
    def on_finish(self) -> None: ...


EVENTS = [name for name in vars(Check) if name.startswith("on_")]


class Doctor:
    """Watches a training run: ``Doctor(model, optimizer).attach()`` or ``with pitstop.doctor():``.

    ``model``/``optimizer`` are optional: roots and optimizers are found as they run. ``guard``
    skips optimizer steps whose gradients are non-finite (reading them every step; a step given a
    closure, as LBFGS and Lightning do, computes its gradients inside ``step()`` and cannot be
    skipped, only reported).
    ``sync_every``: steps between reads of device-side values (default 1 on CPU, 50 with CUDA)."""

    def __init__(self, model: nn.Module | None = None, optimizer: torch.optim.Optimizer | None = None, *,
                 guard: bool = False, sync_every: int | None = None, checks: Iterable[Check] | None = None,
                 select: Iterable[str] = (), ignore: Iterable[str] = (), rank: int | None = None) -> None:
        from pitstop.doctor.checks import default_checks

        self.guard = guard
        self._sync_given = sync_every
        self.sync_every = sync_every or 1  # becomes 50 (unless given) once values live on a GPU
        chosen = list(checks) if checks is not None else default_checks()
        self.select, self.ignore = [s.upper() for s in select], [s.upper() for s in ignore]
        self.checks = [c for c in chosen if any(self.wanted(code) for code in c.codes or (c.code,))]
        self.rank = rank if rank is not None else int(os.environ.get("RANK", "0"))
        self.findings: dict[tuple[str, str], Finding] = {}
        self.internal: list[str] = []
        self.step = 1  # the current step (1-based): optimizer steps completed by the busiest optimizer, + 1
        self.opt_steps: dict[int, int] = {}  # optimizer id -> steps completed
        self._events = 0
        self._closure = False  # the step in progress runs a closure (forward and backward inside step())
        self._last_event: dict[int, int] = {}
        self.optimizers: list[weakref.ref[torch.optim.Optimizer]] = []
        self.roots: list[weakref.ref[nn.Module]] = []
        self.root_names: dict[int, str] = {}
        self.param_names: dict[int, str] = {}
        self.module_names: dict[int, str] = {}
        self.backward_order: list[int] = []  # parameter ids in the order the last backward reached them
        self.skipped_steps: list[int] = []
        self.last_inputs: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self.localize = False  # per-module finiteness checks, once something non-finite was seen
        self.eval_forwards: list[str] = []  # roots forwarded with autograd off next to training (evaluation)
        self.data_share: float | None = None  # measured share of step time waiting for data
        self.crash: dict[str, str] | None = None
        # what the report's charts draw: (step, value) pairs; None where the value was not finite
        self.timeline: dict[str, Any] = {"loss": [], "grad_norm": [], "layers": {}}
        self._model, self._optimizer = model, optimizer
        self._handles: list[Any] = []
        self._hooked: set[int] = set()  # parameters with a grad hook
        self._hooked_roots: set[int] = set()
        self._depth = 0
        self._pending_norms: list[tuple[int, Any, list[torch.Tensor], torch.Tensor]] = []
        self._pending_losses: list[tuple[int, torch.Tensor, str]] = []
        self._attached = False
        self._subs: dict[str, list[Check]] = {}

    # -- attach / detach ------------------------------------------------------------------

    def attach(self) -> Doctor:
        """Install every hook (idempotent)."""
        if self._attached:
            return self
        self._subs = {e: [c for c in self.checks if getattr(type(c), e) is not getattr(Check, e)] for e in EVENTS}
        for check in self.checks:
            check.doctor = self
        m = nn.modules.module
        self._handles += [m.register_module_forward_pre_hook(self._pre_forward),
                          m.register_module_forward_hook(self._post_forward, with_kwargs=True, always_call=True),
                          _optim.register_optimizer_step_pre_hook(self._pre_step),
                          _optim.register_optimizer_step_post_hook(self._post_step)]
        self._orig_backward = torch.autograd.backward
        torch.autograd.backward = self._backward  # type: ignore[assignment]
        self._orig_next = _dataloader._BaseDataLoaderIter.__next__
        doctor, orig_next = self, self._orig_next

        def timed_next(it: Any) -> Any:
            start = time.perf_counter()
            try:
                return orig_next(it)
            finally:
                doctor._data(time.perf_counter() - start)

        _dataloader._BaseDataLoaderIter.__next__ = timed_next  # type: ignore[method-assign]
        if self._model is not None:
            self._add_root(self._model, "model")
        if self._optimizer is not None:
            self._add_optimizer(self._optimizer)
        self._attached = True
        _CURRENT_STEP[0] = self.step
        return self

    def detach(self) -> None:
        """Remove every hook and restore what was wrapped; read what is still on the device."""
        if not self._attached:
            return
        self._flush()
        self._emit("on_finish")
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        torch.autograd.backward = self._orig_backward  # type: ignore[assignment]
        _dataloader._BaseDataLoaderIter.__next__ = self._orig_next  # type: ignore[method-assign]
        self.last_inputs.clear()
        self._hooked.clear()  # attach() again hooks the roots and parameters afresh
        self._hooked_roots.clear()
        self.roots.clear()
        self._attached = False

    def __enter__(self) -> Doctor:
        return self.attach()

    def __exit__(self, *exc: Any) -> None:
        if exc[1] is not None:
            from pitstop.doctor.crash import explain

            explain(self, exc[1])
        self.detach()

    def report(self) -> Any:
        """The findings so far (merged across ranks under torch.distributed) as a ``DoctorReport``."""
        from pitstop.doctor.result import DoctorReport

        return DoctorReport.of(self)

    # -- findings ---------------------------------------------------------------------------

    def wanted(self, code: str) -> bool:
        """Whether ``code`` passes ``select`` / ``ignore`` (codes or prefixes such as PIT1)."""
        return (not self.select or any(code.startswith(s) for s in self.select)) \
            and not any(code.startswith(s) for s in self.ignore)

    def found(self, code: str, where: str, message: str, *, step: int | None = None, fix: str | None = None) -> None:
        """Record (or count again) a finding; a code seen again in the same step is not recounted."""
        if not self.wanted(code):
            return
        step = self.step if step is None else step
        key = (code, where)
        f = self.findings.get(key)
        if f is None:
            self.findings[key] = Finding(code, where, message, step, 1, fix, last_step=step)
        elif f.last_step != step:
            f.count += 1
            f.last_step = step

    def name_of(self, obj: Any) -> str:
        """Qualified name of a parameter or module (``model.encoder.norm``), else its type."""
        if isinstance(obj, nn.Parameter) or (isinstance(obj, torch.Tensor) and id(obj) in self.param_names):
            return self.param_names.get(id(obj), f"<parameter {tuple(obj.shape)}>")
        return self.module_names.get(id(obj), type(obj).__name__)

    def optimizer_label(self, optimizer: torch.optim.Optimizer) -> str:
        same = [o() for o in self.optimizers if o() is not None and type(o()) is type(optimizer)]
        label = type(optimizer).__name__
        return label if len(same) <= 1 else f"{label}#{next(i for i, o in enumerate(same) if o is optimizer) + 1}"

    def roots_alive(self) -> list[nn.Module]:
        return [m for m in (r() for r in self.roots) if m is not None]

    def optimizers_alive(self) -> list[torch.optim.Optimizer]:
        return [o for o in (r() for r in self.optimizers) if o is not None]

    # -- events -------------------------------------------------------------------------------

    def _emit(self, event: str, *args: Any) -> None:
        for check in list(self._subs.get(event, ())):
            try:
                getattr(check, event)(*args)
            except Exception as exc:  # a check must never break training
                self.internal.append(f"{type(check).__name__}.{event} raised {type(exc).__name__}: {exc} "
                                     f"(check turned off)")
                for subs in self._subs.values():
                    if check in subs:
                        subs.remove(check)

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            self.internal.append(f"{fn.__name__} raised {type(exc).__name__}: {exc}")
            return None

    def _pre_forward(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self._depth == 0:
            self._guarded(self._add_root, module, None)
        self._depth += 1

    def _post_forward(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._subs.get("on_module_forward") and not module._modules:
            self._emit("on_module_forward", module, args, output)
        if self._depth == 0:
            self.last_inputs[id(module)] = (args, kwargs)
            if self._subs.get("on_root_forward"):
                self._emit("on_root_forward", module, output, torch.is_grad_enabled())

    def _add_root(self, module: nn.Module, name: str | None) -> None:
        if id(module) in self._hooked_roots:
            return
        self._hooked_roots.add(id(module))
        self.roots.append(weakref.ref(module))
        names = {self.root_names.get(id(r)) for r in self.roots_alive()}
        base = name or ("model" if "model" not in names else type(module).__name__)
        self.root_names[id(module)] = base
        for qual, sub in module.named_modules():
            self.module_names.setdefault(id(sub), f"{base}.{qual}" if qual else base)
        for qual, p in module.named_parameters():
            self.param_names.setdefault(id(p), f"{base}.{qual}")
            self._hook_param(p)

    def _hook_param(self, p: torch.Tensor) -> None:
        if id(p) in self._hooked or not p.requires_grad:
            return
        self._hooked.add(id(p))
        self._handles.append(p.register_post_accumulate_grad_hook(self._grad))

    def _add_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        if id(optimizer) in self.opt_steps:
            return
        self.opt_steps[id(optimizer)] = 0
        self.optimizers.append(weakref.ref(optimizer))
        for group in optimizer.param_groups:
            for p in group["params"]:
                self._hook_param(p)

    def _grad(self, param: torch.Tensor) -> None:
        self.backward_order.append(id(param))
        if self._subs.get("on_grad"):
            self._emit("on_grad", param)

    def _backward(self, tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
                  create_graph: bool = False, grad_variables: Any = None, inputs: Any = None) -> None:
        ts = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        grads = grad_tensors if grad_tensors is not None else grad_variables
        gs = [grads] if isinstance(grads, torch.Tensor) or grads is None else list(grads)
        gs = gs + [None] * (len(ts) - len(gs))
        retain = bool(create_graph if retain_graph is None else retain_graph)
        site = user_site()
        self.backward_order = []
        self._guarded(self._before_backward, ts, gs, retain, site)
        kwargs = {"inputs": inputs} if inputs is not None else {}
        self._orig_backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables, **kwargs)
        self._emit("on_backward_done", ts, retain, site)

    def _before_backward(self, ts: list[torch.Tensor], gs: list[Any], retain: bool, site: str) -> None:
        for t in ts:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                if t.numel() == 1 and t.is_floating_point():
                    self._pending_losses.append((self.step, t.detach().reshape(()), site))
        self._emit("on_backward", ts, gs, retain, site)
        if self._sync_given is None and any(t.is_cuda for _, t, _ in self._pending_losses):
            self.sync_every = 50
        if self.sync_every == 1 or self.guard:
            self._flush_losses()

    def track(self, tensor: torch.Tensor, kind: str, site: str) -> Sentinel | None:
        """A sentinel on ``tensor``'s graph node (None without one)."""
        node = tensor.grad_fn
        if node is None:
            return None
        sentinel = Sentinel(kind, self.step, site)
        node.register_prehook(sentinel)
        return sentinel

    def _pre_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self._guarded(self._add_optimizer, optimizer)
        self._set_step(self.opt_steps[id(optimizer)] + 1)  # this optimizer's step
        rest = [a for a in args if a is not optimizer]  # the hook's args start with the optimizer itself
        self._closure = callable(kwargs.get("closure", rest[0] if rest else None))
        if not self._closure:
            self._emit("on_step", optimizer)
            self._guarded(self._norms, optimizer)

    def _post_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._closure:  # LBFGS, Lightning: forward and backward ran inside step(); now the gradients are known
            self._emit("on_step", optimizer)
            self._guarded(self._norms, optimizer)
        self.opt_steps[id(optimizer)] += 1
        self._events += 1
        self._last_event[id(optimizer)] = self._events
        self._emit("on_step_done", optimizer)
        done = self.step
        self._set_step(self._current())
        if self.step > done:
            self._emit("on_iteration", done)

    def _current(self) -> int:
        """The step in progress: with several optimizers (a GAN), one iteration is a step of each
        optimizer active lately; mid-iteration the busiest optimizer's count is the step."""
        recent = 4 * max(1, len(self.opt_steps))
        counts = [n for key, n in self.opt_steps.items() if self._events - self._last_event.get(key, 0) < recent]
        hi = max(counts, default=0)
        return hi + 1 if min(counts, default=0) == hi else hi

    def _set_step(self, step: int) -> None:
        self.step = step
        _CURRENT_STEP[0] = step

    def _norms(self, optimizer: torch.optim.Optimizer) -> None:
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if not params:
            return
        grads = [p.grad for p in params]
        norms = torch.stack([n.float() for n in torch._foreach_norm([g.detach() for g in grads])])  # type: ignore[union-attr]
        if self.guard:
            finite = torch.isfinite(norms)
            if not bool(finite.all()):
                for p in params:
                    p.grad = None  # the optimizer skips parameters without a gradient: weights stay clean
                self.skipped_steps.append(self.step)
        if self._sync_given is None and norms.is_cuda:
            self.sync_every = 50
        self._pending_norms.append((self.step, weakref.ref(optimizer), params, norms))
        if self.guard or self.step % self.sync_every == 0:
            self._flush()

    def _data(self, wait_s: float) -> None:
        self._emit("on_data", wait_s)

    def _flush_losses(self) -> None:
        if not self._pending_losses:
            return
        pending, self._pending_losses = self._pending_losses, []
        values = torch.stack([t.float().cpu() for _, t, _ in pending]).tolist()
        for (step, _, site), value in zip(pending, values, strict=True):
            self.timeline["loss"].append((step, value if math.isfinite(value) else None))
            self._emit("on_loss", step, value, site)

    def _flush(self) -> None:
        """Read device-side values (one transfer) and hand them to the checks."""
        self._flush_losses()
        pending, self._pending_norms = self._pending_norms, []
        for step, opt_ref, params, norms in pending:
            optimizer = opt_ref()
            if optimizer is not None:
                values = norms.cpu().tolist()
                self._record_norms(step, params, values)
                self._emit("on_grad_norms", step, optimizer, params, values)
        self._emit("on_sync")


    def _record_norms(self, step: int, params: list[torch.Tensor], values: list[float]) -> None:
        """The gradient-norm timeline: the total per step, and per parameter (the first 256 seen)."""
        finite = all(math.isfinite(v) for v in values)
        total = math.sqrt(sum(v * v for v in values)) if finite else None
        self.timeline["grad_norm"].append((step, total))
        layers = self.timeline["layers"]
        for p, v in zip(params, values, strict=True):
            name = self.name_of(p)
            if name in layers or len(layers) < 256:
                layers.setdefault(name, []).append((step, v if math.isfinite(v) else None))


def format_exception_line(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    return "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1][:400]
