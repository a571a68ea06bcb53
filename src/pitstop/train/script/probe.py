"""What runs inside a script variant's process, around the user's code: seeds, the step clock
(optimizer-step post hooks; the first optimizer that steps is the clock: a GAN's two optimizers
make one step), the losses ``backward()`` is called on, the pause before the first training forward
and at step boundaries, and (the discovery run) where the training step lives in the user's files.

Nothing here edits the script: the variant's technique is in its source already (``edits``)."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.optim import optimizer as optim_hooks

from pitstop.train.clock import InStep
from pitstop.train.script import amp
from pitstop.train.script.frames import caller_site, site_of, user_frames
from pitstop.train.script.loaders import check_cache
from pitstop.train.script.loaders import watch as watch_loaders
from pitstop.train.script.source_edit import deepest_shared


class Probe:
    """Hooks in the variant's process; ``pause(reply)`` hands control to pitstop (``on_pause``)."""

    def __init__(self, on_pause: Callable[[str, Any], None], discover: bool) -> None:
        self.on_pause, self.discover = on_pause, discover
        self.pid = os.getpid()  # the script's process: the only one whose hooks act
        self.steps = 0  # completed steps of the clock optimizer
        self.clock: torch.optim.Optimizer | None = None
        self.started = False  # the first training forward happened (pause 0 is behind us)
        self.losses: list[torch.Tensor] = []  # values backward() was called on since the last step
        self._inside_from: int | None = None  # where the clock's step(closure) began in ``losses``
        self.step_losses: list[float] = []
        self.step_times: list[float] = []
        self.step_cpu: list[float] = []  # the process's CPU seconds (all threads) per step: what load does not move
        self.step_opt: list[float] = []  # seconds inside optimizer.step() per step (every optimizer): where the
        # optimizer implementation acts, measured apart from the rest of the step's noise
        self.in_step = InStep()
        self.step_data: list[float] = []  # seconds per step waiting in a DataLoader iterator's __next__ (the
        # input wait: a loader with workers hands over batches made while the step ran)
        self.data_s = 0.0
        self.started_at = time.perf_counter()  # the script's start (before its imports)
        self.before_start_s: float | None = None  # from the script's start to its first training forward: its
        # imports, data and model set-up, a loader's worker start-up and first batch (a one-time cost)
        self._last_loader: int | None = None  # the loader (its id) whose iterator handed over the last batch
        self._rng_checks = 0
        # the DataLoaders built (discovery, in the order of sites["loaders"]), whose training one's items are
        # checked (cache_check); a cache variant's datasets filled at their first iter() (item_cache.fill)
        self.loader_objects: list[Any] = []
        self.cache_check, self.fill_cache, self.filled, self.fill_s = False, False, set[int](), 0.0
        self.loader_queue = 0  # batches the last iterator's workers make ahead (num_workers x prefetch_factor)
        self.backwards = 0  # backward() calls on a scalar in this process (iterations per step: accumulation)
        self.closure_seen = False  # a step(closure) evaluates the loss inside the step, maybe several times
        self.opt_timed = True  # every optimizer's parameters on the CPU: its step's time is its work
        self.cpu_resumed = time.process_time()
        self.eval_steps: list[bool] = []  # steps whose interval was mostly no_grad / inference_mode (validation)
        self.nograd_s, self._nograd_depth, self._nograd_since = 0.0, 0, 0.0
        self.resumed = time.perf_counter()
        self.first_grads: dict[str, torch.Tensor] = {}  # step-1 gradients, by optimizer/group/param index
        self.optimizers: list[torch.optim.Optimizer] = []
        self.sites: dict[str, Any] = {"optimizers": [], "zero_grad": [], "forward": None, "backward": None,
                                      "model": None, "trainers": [], "ddp": [], "fsdp": [], "events": [],
                                      "pairs": []}
        self._handles: list[Any] = []
        self._orig: dict[str, Any] = {}

    # -- install -------------------------------------------------------------------------------

    def install(self) -> None:
        """Every hook; the module-call patch lasts until the first training forward. Only this process
        is watched: a process forked from it (torch.multiprocessing, a DataLoader worker) inherits the
        hooks and the connection to pitstop, and must neither pause nor count (``self.pid``)."""
        self._handles += [optim_hooks.register_optimizer_step_pre_hook(self._pre_step),
                          optim_hooks.register_optimizer_step_post_hook(self._post_step)]
        self._orig["backward"] = torch.autograd.backward
        # safe: each patch below calls the original with the same arguments and returns what it returns;
        # Module.__call__ is restored at the first training forward (_first_call); the others live in the
        # script's own child process, which ends with the run
        torch.autograd.backward = self._backward
        probe = self  # the patched methods are plain functions (a bound method would not bind to the object)

        def __call__(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
            return probe._first_call(module, *args, **kwargs)

        def __init__(optimizer: Any, params: Any, defaults: Any) -> None:
            probe._optimizer_init(optimizer, params, defaults)

        def zero_grad(optimizer: Any, set_to_none: bool = True) -> None:
            probe._zero_grad(optimizer, set_to_none)

        # safe: as above (the originals kept in self._orig)
        self._orig["call"] = nn.Module.__call__
        nn.Module.__call__ = __call__  # type: ignore[method-assign]
        self._orig["init"] = torch.optim.Optimizer.__init__
        torch.optim.Optimizer.__init__ = __init__  # type: ignore[method-assign,assignment]
        self._orig["zero_grad"] = torch.optim.Optimizer.zero_grad
        torch.optim.Optimizer.zero_grad = zero_grad  # type: ignore[method-assign,assignment]
        for cls in (torch.no_grad, torch.inference_mode):
            self._time_regions(cls)
        watch_loaders(self)  # the input wait of each step, and (discovery) the DataLoaders
        amp.count_skips()  # every variant: the steps an fp16 GradScaler skipped
        if self.discover:
            self._watch_ddp()
            amp.watch(self.sites)  # where the optimizers step and the gradients are clipped

    def _watch_ddp(self) -> None:
        """Where the script builds its DistributedDataParallel (its knobs are keywords of that call)."""
        from torch.nn.parallel import DistributedDataParallel

        original, sites = DistributedDataParallel.__init__, self.sites["ddp"]

        def __init__(module: Any, *args: Any, **kwargs: Any) -> None:
            sites.append({"site": caller_site(), "keywords": sorted(kwargs)})
            original(module, *args, **kwargs)

        # safe: calls the original with the same arguments and returns what it returns;
        # never undone: it lives in the script's own child process, which ends with the run
        DistributedDataParallel.__init__ = __init__  # type: ignore[method-assign,assignment]
        self._watch_fully_shard()

    def _watch_fully_shard(self) -> None:
        """Where the script calls FSDP2's ``fully_shard`` (before it imports the name)."""
        import functools

        try:
            import torch.distributed.fsdp as fsdp
        except ImportError:  # a build without distributed
            return
        original, sites = getattr(fsdp, "fully_shard", None), self.sites["fsdp"]
        if original is None:
            return

        @functools.wraps(original)  # keeps its attributes (fully_shard.state)
        def fully_shard(module: Any, *args: Any, **kwargs: Any) -> Any:
            sites.append({"site": caller_site(), "keywords": sorted(kwargs)})
            return original(module, *args, **kwargs)

        fsdp.fully_shard = fully_shard

    def _time_regions(self, cls: Any) -> None:
        """Time spent under ``no_grad`` / ``inference_mode`` (validation inside a step's interval)."""
        enter, leave, probe = cls.__enter__, cls.__exit__, self

        def __enter__(ctx: Any) -> Any:
            if probe._nograd_depth == 0:
                probe._nograd_since = time.perf_counter()
            probe._nograd_depth += 1
            return enter(ctx)

        def __exit__(ctx: Any, *exc: Any) -> Any:
            probe._nograd_depth = max(0, probe._nograd_depth - 1)
            if probe._nograd_depth == 0:
                probe.nograd_s += time.perf_counter() - probe._nograd_since
            return leave(ctx, *exc)

        # safe: calls the original with the same arguments and returns what it returns;
        # never undone: it lives in the script's own child process, which ends with the run
        cls.__enter__, cls.__exit__ = __enter__, __exit__

    # -- the first training forward: pause 0 -----------------------------------------------------

    def _first_call(self, module: nn.Module, *args: Any, **kwargs: Any) -> Any:
        orig = self._orig["call"]
        if (not self.started and os.getpid() == self.pid and torch.is_grad_enabled()
                and not torch.compiler.is_compiling()):
            self.started = True
            nn.Module.__call__ = orig  # type: ignore[method-assign]
            self.before_start_s = time.perf_counter() - self.started_at
            if self.discover:
                self._record_forward(module, args, kwargs)
                self._watch_first_step()
                loaders = self.sites.get("loaders", [])
                self.sites["train_loader"] = next((i for i, x in enumerate(loaders) if x["id"] == self._last_loader),
                                                  None)
                check_cache(self)  # its items: may they be cached?
            self.pause("start")
            self.data_s = 0.0
        return orig(module, *args, **kwargs)

    def _watch_first_step(self) -> None:
        """Through the first two steps (discovery only): every training forward from outside a module
        and every backward, in order, so that each backward is paired with the forwards that led to it
        (a GAN's three: D on real data, G then D on fakes, D for G's loss)."""
        depth = [0]
        events = self.sites["events"] = []
        drops: dict[int, float] = {}
        self._dropout = drops

        def pre(module: nn.Module, args: Any) -> None:
            p = _mask_rate(module)
            if p:
                drops[id(module)] = p
            if depth[0] == 0 and torch.is_grad_enabled():
                events.append(("forward", [site_of(f) for f in user_frames(sys._getframe(1))]))
            depth[0] += 1

        def post(module: nn.Module, args: Any, output: Any) -> None:
            depth[0] = max(0, depth[0] - 1)

        from torch.nn.modules import module as modules

        self._step1_hooks: list[Any] | None = [modules.register_module_forward_pre_hook(pre),
                                               modules.register_module_forward_hook(post, always_call=True)]
        # installed before the first forward runs its hooks: it records that forward too

    def _record_forward(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        frames = user_frames(sys._getframe(2))
        tensors = [t for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)]
        param = next(module.parameters(), None)
        self.sites["forward"] = {"stack": [site_of(f) for f in frames], "module": type(module).__name__,
                                 "input_dims": [t.dim() for t in tensors],
                                 "device": str(param.device) if param is not None else "cpu"}
        self.sites["model"] = _binding(module, frames)

    # -- steps ----------------------------------------------------------------------------------

    def _pre_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if os.getpid() != self.pid:
            return
        self.in_step.pre()
        if optimizer is self.clock or self.clock is None:  # a closure re-evaluates the loss inside step()
            closure = args[1] if len(args) > 1 else kwargs.get("closure")  # args: (optimizer, closure)
            self._inside_from = len(self.losses) if callable(closure) else None
            self.closure_seen = self.closure_seen or callable(closure)

    def _first_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        """Each optimizer's gradients at its first step, read after the step (a closure step, as
        Lightning makes, computes them inside step(); no optimizer clears them)."""
        if not any(o is optimizer for o in self.optimizers):
            self.optimizers.append(optimizer)
            self.opt_timed = self.opt_timed and all(
                p.device.type == "cpu" for group in optimizer.param_groups for p in group["params"])
            index = len(self.optimizers) - 1
            for g, group in enumerate(optimizer.param_groups):
                for k, p in enumerate(group["params"]):
                    if p.grad is not None:
                        self.first_grads[f"optimizer{index}.group{g}.param{k}"] = p.grad.detach().cpu().float().clone()

    def _post_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if os.getpid() != self.pid:
            return
        self.in_step.post()
        self._first_gradients(optimizer)
        if self.clock is None:
            self.clock = optimizer
        if optimizer is not self.clock:
            return
        loss = _sum(self._step_losses())  # read first: on CUDA it waits for the step's kernels, which the
        # step's time must hold (read after the clock, the wait fell outside every step: launches alone)
        now = time.perf_counter()
        self.steps += 1
        if self.discover and self.steps == 2:  # two: a step counted at D's optimizer has G's update after it
            self._end_first_step()
        wall = now - self.resumed
        self.step_times.append(wall)
        self.step_cpu.append(time.process_time() - self.cpu_resumed)
        opt_s = self.in_step.pop()
        self.step_opt.append(opt_s if self.opt_timed else math.nan)  # a CUDA step returns before it ran
        self.step_data.append(self.data_s)
        self.eval_steps.append(self.nograd_s > 0.5 * wall)  # mostly an evaluation: not a training step's time
        self.nograd_s = 0.0
        self.step_losses.append(loss)
        self.losses, self._inside_from = [], None
        self.pause("step")
        self.resumed, self.cpu_resumed = time.perf_counter(), time.process_time()
        self.data_s = 0.0

    def _step_losses(self) -> list[torch.Tensor]:
        """The losses of this step: all backward() values since the last step, but of a step given a
        closure only its first evaluation (LBFGS re-evaluates the loss up to ``max_iter`` times, and
        how often depends on the variant; the first is the loss at the step's start, as step() returns)."""
        start = self._inside_from
        return self.losses if start is None else self.losses[:start + 1]

    @property
    def backwards_per_step(self) -> int:
        """Loop iterations per optimizer step, as the backward passes per step show (gradient
        accumulation: one backward line run k times per step); 1 for a closure step, which may evaluate
        its loss several times. A GAN's three backward lines in one iteration are one iteration."""
        if self.closure_seen or not self.steps:
            return 1
        lines = max(1, len({str(p["backward"][-1:]) for p in self.sites.get("pairs") or []}))
        return max(1, round(self.backwards / self.steps / lines))

    def pause(self, where: str) -> None:
        """Give control to pitstop (it returns when the script may go on)."""
        self.on_pause(where, self)
        self.resumed, self.cpu_resumed = time.perf_counter(), time.process_time()

    def _backward(self, tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(tensors, torch.Tensor) and tensors.numel() == 1 and os.getpid() == self.pid:
            self.losses.append(tensors.detach())
            self.backwards += 1
            if self.discover and (self.sites["backward"] is None or getattr(self, "_step1_hooks", None)):
                stack = [site_of(f) for f in user_frames(sys._getframe(1))]
                self.sites["backward"] = self.sites["backward"] or {"stack": stack}
                if getattr(self, "_step1_hooks", None):
                    self.sites["events"].append(("backward", stack))
        return self._orig["backward"](tensors, *args, **kwargs)

    def _end_first_step(self) -> None:
        """Two steps are over: the distinct forward/backward pairs, and the hooks removed."""
        for handle in getattr(self, "_step1_hooks", None) or []:
            handle.remove()
        self._step1_hooks = None
        pairs, since = [], []
        for kind, stack in self.sites.get("events", []):
            if kind == "forward":
                since.append(stack)
            elif since:  # the first forward that leads to it in the code (not a previous step's sampling)
                lead = next((f for f in since if _precedes(f, stack)), since[0])
                pair = {"forward": lead, "backward": stack}
                if pair not in pairs:
                    pairs.append(pair)
                since = []
        self.sites["pairs"] = pairs
        drops = getattr(self, "_dropout", None) or {}
        self.sites["dropout"] = (f"{len(drops)} module{'s' * (len(drops) > 1)} drawing masks, p up to "
                                 f"{max(drops.values()):g}") if drops else None

    # -- where the optimizer is made and zeroed ------------------------------------------------

    def _optimizer_init(self, optimizer: Any, params: Any, defaults: Any) -> None:
        self._orig["init"](optimizer, params, defaults)
        if self.discover and os.getpid() == self.pid and type(optimizer).__module__.startswith("torch.optim"):
            import inspect

            accepted = inspect.signature(type(optimizer).__init__).parameters
            self.sites["optimizers"].append({
                "class": type(optimizer).__name__, "site": caller_site(),
                "flags": [f for f in ("foreach", "fused") if f in accepted],
                "groups": len(optimizer.param_groups),
                "set": {f: optimizer.defaults.get(f) for f in ("foreach", "fused") if f in optimizer.defaults}})

    def _zero_grad(self, optimizer: Any, set_to_none: bool = True) -> None:
        if self.discover and os.getpid() == self.pid:
            site = caller_site()
            if site is not None and site not in self.sites["zero_grad"]:
                self.sites["zero_grad"].append(site)
        self._orig["zero_grad"](optimizer, set_to_none)


def _precedes(forward: list[dict[str, Any]], backward: list[dict[str, Any]]) -> bool:
    """Whether the forward's line comes before the backward's in the deepest frame their stacks share.
    A forward after the step's last backward (dcgan's ``fake = netG(fixed_noise)`` for its sample
    images, under ``if i % 100 == 0``) runs before the next step's backward in time, not in the code:
    it is no part of that backward's loss."""
    common = deepest_shared(forward, backward)
    return common is not None and common[0]["line"] <= common[1]["line"]


def _mask_rate(module: nn.Module) -> float:
    """The rate at which a module in training draws random masks (dropout, attention dropout), else 0."""
    if not module.training:
        return 0.0
    if isinstance(module, nn.modules.dropout._DropoutNd):
        return float(module.p)
    if isinstance(module, nn.MultiheadAttention):
        return float(module.dropout)
    return 0.0


def _sum(values: list[torch.Tensor]) -> float:
    """The step's loss: the sum of what backward() was called on (micro-batches add up)."""
    if not values:
        return math.nan
    return float(sum(float(v.float()) for v in values))


def _binding(module: nn.Module, frames: list[Any]) -> dict[str, Any] | None:
    """Where the model is bound: the outermost user frame with a variable that is ``module`` or holds
    it as a submodule (``model``, ``model.transformer``), and that frame's current line."""
    for frame in frames:
        for scope in (frame.f_locals, frame.f_globals if frame.f_code.co_name == "<module>" else {}):
            for name, value in list(scope.items()):
                path = _path_to(value, module)
                if path is not None and name.isidentifier() and not name.startswith("__"):
                    return {"expression": ".".join([name, *path]) if path else name, **site_of(frame)}
    return None


def _path_to(value: Any, module: nn.Module) -> list[str] | None:
    """The attribute path from ``value`` (a module) to ``module`` ([] when it is the module)."""
    if value is module:
        return []
    if not isinstance(value, nn.Module):
        return None
    for qualname, sub in value.named_modules():
        if sub is module and qualname and all(part.isidentifier() for part in qualname.split(".")):
            return qualname.split(".")
    return None
