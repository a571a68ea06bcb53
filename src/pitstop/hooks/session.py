"""The one instrumentation layer: PyTorch's own hooks turned into events for consumers.

A ``Session`` installs (``attach``) and removes (``detach``) every hook and dispatches what they
see to the consumers subscribed to it. The doctor's checks are consumers; so are profilers.

Hooks used (all removed by ``detach``):
- global module forward pre/post hooks: which modules are roots (called from outside any
  module), a root's last inputs (``last_inputs``, for replaying a forward), per-module events;
- global optimizer step pre/post hooks: steps (``counter``, a ``StepCounter``);
- ``register_post_accumulate_grad_hook`` on every parameter of a root or an optimizer:
  gradients as they are accumulated, in backward order (``backward_order``);
- a thin wrapper of ``torch.autograd.backward`` (``Tensor.backward`` calls it);
- thin wrappers of ``Optimizer.zero_grad`` and ``Module.zero_grad`` (a clearing seen as it happens:
  under DDP the reducer writes ``.grad`` in place, so no version counter tells a cleared gradient);
- ``_BaseDataLoaderIter.__next__`` timing: how long each step waits for its batch.

A consumer subclasses ``Consumer`` and overrides the ``on_<event>`` methods it needs; only
those are ever called (an event nobody overrides costs nothing beyond the hook itself)::

    class Phases(Consumer):
        def on_root_forward_start(self, module): self.t0 = time.perf_counter()
        def on_root_forward(self, module, output, grad_enabled): ...

    session = Session(model, optimizer)
    session.subscribe(Phases())
    session.attach()
    ...  # train
    session.detach()  # on_finish, then every hook removed

Events, in the order a training step emits them (the method docstrings say more):
``on_data_start()``, ``on_data(wait_s)``; ``on_root_forward_start(module)``,
``on_module_forward(module, inputs, output)`` (leaf modules), ``on_root_forward(module, output,
grad_enabled)``; ``on_zero_grad(owner)``; ``on_backward(tensors, gradients, retain_graph, site)``, ``on_grad(param)``,
``on_backward_done(tensors, retain_graph, site)``; ``on_step_start(optimizer)``,
``on_step(optimizer)``, ``on_step_done(optimizer)``, ``on_iteration(step)``; ``on_finish()``.
``emit(name, *args)`` also dispatches events that consumers define for each other (the doctor
adds ``on_loss``, ``on_grad_norms``, ``on_skipped``, ``on_sync``, ``on_evaluation``). A consumer that raises is
unsubscribed, with a line in ``internal``, and training goes on."""

from __future__ import annotations

import contextlib
import functools
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.optim import optimizer as _optim
from torch.utils.data import dataloader as _dataloader

from pitstop.hooks.consumer import Consumer, noop
from pitstop.hooks.sites import user_site
from pitstop.hooks.steps import StepCounter
from pitstop.hooks.watch import ManualSteps, Workers

__all__ = ["Consumer", "Session", "noop"]  # Consumer lives in consumer.py; importable from here as before


def _handlers(consumer: Consumer) -> list[str]:
    """The events ``consumer`` overrides."""
    cls = type(consumer)
    return [name for name in dir(cls) if name.startswith("on_") and callable(getattr(cls, name))
            and not getattr(getattr(cls, name), "__pitstop_noop__", False)]


class Session:
    """Hooks in, events out. ``model``/``optimizer`` are optional: roots and optimizers are
    found as they run (a given model is named ``model``)."""

    def __init__(self, model: nn.Module | None = None, optimizer: torch.optim.Optimizer | None = None) -> None:
        self.counter = StepCounter()
        self.internal: list[str] = []  # internal warnings (a consumer raised; training went on)
        self.optimizers: list[weakref.ref[torch.optim.Optimizer]] = []
        self.roots: list[weakref.ref[nn.Module]] = []
        self.root_names: dict[int, str] = {}
        self.param_names: dict[int, str] = {}
        self.module_names: dict[int, str] = {}
        self.backward_order: list[int] = []  # parameter ids in the order the last backward reached them
        self.last_inputs: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self.data_iter: weakref.ref[Any] | None = None  # the DataLoader iterator of the last on_data_start
        self.attached = False
        self._model, self._optimizer = model, optimizer
        self._consumers: list[Consumer] = []
        self._subs: dict[str, list[Consumer]] = {}
        self._handles: list[Any] = []
        self._hooked: set[int] = set()  # parameters with a grad hook
        self._hooked_roots: set[int] = set()
        self._depth = 0
        self._orig_backward: Any = None
        self._orig_next: Any = None
        self._orig_zero: tuple[Any, Any] = (None, None)
        self.workers = Workers()  # processes the script starts (not watched: named in the report)
        self.manual = ManualSteps(self)  # parameters updated by hand after backward count as steps
        self.subscribe(self.manual)

    @property
    def step(self) -> int:
        """The step in progress (1-based)."""
        return self.counter.step

    # -- consumers ------------------------------------------------------------------------

    def subscribe(self, consumer: Consumer) -> None:
        """Dispatch to ``consumer`` the events it overrides (after those subscribed earlier)."""
        if consumer in self._consumers:
            return
        self._consumers.append(consumer)
        for event in _handlers(consumer):
            self._subs.setdefault(event, []).append(consumer)

    def unsubscribe(self, consumer: Consumer) -> None:
        """Stop dispatching to ``consumer`` (no-op when it is not subscribed)."""
        if consumer in self._consumers:
            self._consumers.remove(consumer)
        for subs in self._subs.values():
            if consumer in subs:
                subs.remove(consumer)

    def emit(self, event: str, *args: Any) -> None:
        """Call ``event`` on every consumer that overrides it; one that raises is unsubscribed."""
        for consumer in list(self._subs.get(event, ())):
            try:
                getattr(consumer, event)(*args)
            except Exception as exc:  # a consumer must never break training
                self.warn(f"{type(consumer).__name__}.{event} raised {type(exc).__name__}: {exc} "
                          f"(check turned off)")
                self.unsubscribe(consumer)

    def wants(self, event: str) -> bool:
        """Whether some consumer overrides ``event``."""
        return bool(self._subs.get(event))

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No events inside (e.g. a replayed forward that is not part of the run)."""
        subs, self._subs = self._subs, {}
        try:
            yield
        finally:
            self._subs = subs

    def warn(self, message: str) -> None:
        """An internal warning: recorded, training goes on."""
        self.internal.append(message)

    # -- names ----------------------------------------------------------------------------

    def name_of(self, obj: Any) -> str:
        """Qualified name of a parameter or module (``model.encoder.norm``), else its type."""
        if isinstance(obj, nn.Parameter) or (isinstance(obj, torch.Tensor) and id(obj) in self.param_names):
            return self.param_names.get(id(obj), f"<parameter {tuple(obj.shape)}>")
        return self.module_names.get(id(obj), type(obj).__name__)

    def optimizer_label(self, optimizer: torch.optim.Optimizer) -> str:
        """``Adam``, or ``Adam#2`` when several optimizers share the type."""
        same = [o for o in self.optimizers_alive() if type(o) is type(optimizer)]
        label = type(optimizer).__name__
        return label if len(same) <= 1 else f"{label}#{next(i for i, o in enumerate(same) if o is optimizer) + 1}"

    def roots_alive(self) -> list[nn.Module]:
        return [m for m in (r() for r in self.roots) if m is not None]

    def optimizers_alive(self) -> list[torch.optim.Optimizer]:
        return [o for o in (r() for r in self.optimizers) if o is not None]

    # -- attach / detach --------------------------------------------------------------------

    def attach(self) -> Session:
        """Install every hook (idempotent)."""
        if self.attached:
            return self
        m = nn.modules.module
        self._handles += [m.register_module_forward_pre_hook(self._pre_forward),
                          m.register_module_forward_hook(self._post_forward, with_kwargs=True, always_call=True),
                          _optim.register_optimizer_step_pre_hook(self._pre_step),
                          _optim.register_optimizer_step_post_hook(self._post_step)]
        self._orig_backward = torch.autograd.backward
        torch.autograd.backward = self._backward  # safe: runs the original (after its checks); undone in detach()
        self._orig_next = _dataloader._BaseDataLoaderIter.__next__
        # safe: times the original __next__ and returns its batch; undone in detach()
        _dataloader._BaseDataLoaderIter.__next__ = self._timed_next()  # type: ignore[method-assign,assignment]
        # safe: class attributes wrapped to call the original, restored by detach(); a subclass's own
        # zero_grad (rare) is not seen
        self._orig_zero = (torch.optim.Optimizer.zero_grad, nn.Module.zero_grad)
        torch.optim.Optimizer.zero_grad = self._zero_grad(self._orig_zero[0])  # type: ignore[method-assign]
        nn.Module.zero_grad = self._zero_grad(self._orig_zero[1])  # type: ignore[method-assign]
        self.workers.attach()
        if self._model is not None:
            self.add_root(self._model, "model")
        if self._optimizer is not None:
            self.add_optimizer(self._optimizer)
        self.attached = True
        self.counter.set(self.counter.step)
        return self

    def detach(self) -> None:
        """``on_finish``, then remove every hook and restore what was wrapped."""
        if not self.attached:
            return
        self.emit("on_finish")
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        torch.autograd.backward = self._orig_backward
        _dataloader._BaseDataLoaderIter.__next__ = self._orig_next  # type: ignore[method-assign]
        torch.optim.Optimizer.zero_grad, nn.Module.zero_grad = self._orig_zero  # type: ignore[method-assign]
        self.workers.detach()
        self.last_inputs.clear()
        self._hooked.clear()  # attach() again hooks the roots and parameters afresh
        self._hooked_roots.clear()
        self.roots.clear()
        self._depth = 0
        self.attached = False

    def add_root(self, module: nn.Module, name: str | None = None) -> None:
        """Watch ``module`` as a root: name its modules and parameters, hook its parameters."""
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

    def add_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Watch ``optimizer``: count its steps, hook its parameters (idempotent)."""
        if self.counter.knows(optimizer):
            return
        self.counter.add(optimizer)
        self.optimizers.append(weakref.ref(optimizer))
        for group in optimizer.param_groups:
            for p in group["params"]:
                self._hook_param(p)

    def manual_step(self) -> None:
        """Parameters were updated by hand (no optimizer): a training step completed."""
        self.emit("on_iteration", self.counter.manual())

    # -- hooks ------------------------------------------------------------------------------

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            self.warn(f"{fn.__name__} raised {type(exc).__name__}: {exc}")
            return None

    def _timed_next(self) -> Callable[[Any], Any]:
        session, orig_next = self, self._orig_next

        def timed_next(it: Any) -> Any:
            if not (session.wants("on_data") or session.wants("on_data_start")):
                return orig_next(it)
            session.data_iter = weakref.ref(it)
            session.emit("on_data_start")
            start = time.perf_counter()
            try:
                return orig_next(it)
            finally:
                session.emit("on_data", time.perf_counter() - start)

        return timed_next

    def _zero_grad(self, original: Callable[..., Any]) -> Callable[..., Any]:
        session = self

        @functools.wraps(original)
        def zero_grad(owner: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(owner, *args, **kwargs)
            if session._subs.get("on_zero_grad"):
                session.emit("on_zero_grad", owner)
            return out

        return zero_grad

    def _hook_param(self, p: torch.Tensor) -> None:
        if id(p) in self._hooked or not p.requires_grad:
            return
        self._hooked.add(id(p))
        self._handles.append(p.register_post_accumulate_grad_hook(self._grad))

    def _pre_forward(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self._depth == 0:
            self._guarded(self.add_root, module, None)
            if self._subs.get("on_root_forward_start"):
                self.emit("on_root_forward_start", module)
        self._depth += 1

    def _post_forward(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._subs.get("on_module_forward") and not module._modules:
            self.emit("on_module_forward", module, args, output)
        if self._depth == 0:
            self.last_inputs[id(module)] = (args, kwargs)
            if self._subs.get("on_root_forward"):
                self.emit("on_root_forward", module, output, torch.is_grad_enabled())

    def _grad(self, param: torch.Tensor) -> None:
        self.backward_order.append(id(param))
        if self._subs.get("on_grad"):
            self.emit("on_grad", param)

    def _backward(self, tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
                  create_graph: bool = False, grad_variables: Any = None, inputs: Any = None) -> None:
        ts = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        grads = grad_tensors if grad_tensors is not None else grad_variables
        gs = [grads] if isinstance(grads, torch.Tensor) or grads is None else list(grads)
        gs = gs + [None] * (len(ts) - len(gs))
        retain = bool(create_graph if retain_graph is None else retain_graph)
        site = user_site()
        self.backward_order = []
        self.emit("on_backward", ts, gs, retain, site)
        kwargs = {"inputs": inputs} if inputs is not None else {}
        self._orig_backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables, **kwargs)
        self.emit("on_backward_done", ts, retain, site)

    def _pre_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self._guarded(self.add_optimizer, optimizer)
        closure = self.counter.begin(optimizer, args, kwargs)
        self.emit("on_step_start", optimizer)
        if not closure:
            self.emit("on_step", optimizer)

    def _post_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self.counter.closure:  # LBFGS, Lightning: forward and backward ran inside step()
            self.emit("on_step", optimizer)
        self.counter.complete(optimizer)
        self.emit("on_step_done", optimizer)
        done = self.counter.advance()
        if done is not None:
            self.emit("on_iteration", done)
