"""The run-time (R) checks of CODES.md, one class per code. Each overrides only the events it
needs (``core.Check``); the doctor calls nothing else."""

from __future__ import annotations

import math
import statistics
import weakref
from collections import deque
from typing import Any

import torch
from torch import nn

from pitstop.doctor.core import MODE_DEPENDENT, Check, Sentinel


def _tensors(output: Any, limit: int = 8) -> list[torch.Tensor]:
    """The tensors in a module output (tensor, tuple/list, dict, HF ModelOutput), at most ``limit``."""
    found: list[torch.Tensor] = []
    stack = [output]
    while stack and len(found) < limit:
        obj = stack.pop()
        if isinstance(obj, torch.Tensor):
            found.append(obj)
        elif isinstance(obj, dict):
            stack.extend(reversed(list(obj.values())))
        elif isinstance(obj, (list, tuple)):
            stack.extend(reversed(obj))
    return found


def _and_more(names: list[str], shown: int = 3) -> str:
    head = ", ".join(f"`{n}`" for n in names[:shown])
    return head + (f" and {len(names) - shown} more" if len(names) > shown else "")


class StaleGradients(Check):
    """PIT101: an optimizer step applies gradients that still hold the previous step's values.

    After each step its gradient tensors are remembered (weakly) with their version counters, and
    accumulations into them are counted. At the next step a cleared gradient is a new tensor
    (``zero_grad()`` sets None) or one changed in place beyond the accumulations (``zero_()``);
    the same tensor changed only by accumulations was never cleared. Several backwards per step
    with zero_grad after the step (intentional accumulation), and a GAN whose generator backward
    passes through the discriminator before its zero_grad, are not this."""

    code = "PIT101"

    def __init__(self) -> None:
        self.left: dict[int, tuple[weakref.ref[torch.Tensor], int]] = {}
        self.accumulated: dict[int, int] = {}

    def on_step_done(self, optimizer: torch.optim.Optimizer) -> None:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.left[id(p)] = (weakref.ref(p.grad), p.grad._version)
                    self.accumulated[id(p)] = 0

    def on_grad(self, param: torch.Tensor) -> None:
        if id(param) in self.accumulated:
            self.accumulated[id(param)] += 1

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        stale = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                entry = self.left.pop(id(p), None)
                added = self.accumulated.pop(id(p), 0)
                if entry is not None and p.grad is not None and entry[0]() is p.grad \
                        and p.grad._version - entry[1] == added:
                    stale.append(self.doctor.name_of(p))
        if stale:
            self.doctor.found(self.code, self.doctor.optimizer_label(optimizer),
                              f"gradients of {_and_more(stale)} still held the previous step's values at this "
                              f"step: no zero_grad() between two optimizer steps, so old gradients are applied again")


class GraphTracker(Check):
    """PIT102 (graph kept alive), the growing-graph half of PIT103, and PIT201 (forward graphs
    no backward used), from sentinels on graph nodes.

    Every loss that backward runs on and every grad-recording root forward output gets a
    sentinel. At the end of each iteration: sentinels of two or more earlier steps still alive
    mean graph-attached tensors are kept across steps (PIT102), unless a later backward ran
    through them, which means the graph grows step after step (PIT103). A forward output's
    sentinel that dies, or is old, without any backward having run through it is a forward
    recorded for nothing (PIT201)."""

    code = "PIT102"
    codes = ("PIT102", "PIT103", "PIT201")
    KEEP = 2  # sentinels alive from this many earlier steps (or more) = kept alive

    def __init__(self) -> None:
        self.alive: list[weakref.ref[Sentinel]] = []
        self.unused: dict[str, list[int]] = {}  # root name -> steps of forwards no backward used
        self.groups: set[_Group] = set()  # forwards whose graphs are alive
        self.modes: dict[str, str] = {}

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                self._keep(self.doctor.track(t, "loss", site))

    def on_root_forward(self, module: nn.Module, output: Any, grad: bool) -> None:
        if not grad:
            return
        name = self.doctor.name_of(module)
        self.modes[name] = "train" if module.training else "eval"
        tracked = [t for t in _tensors(output) if t.grad_fn is not None]
        if not tracked:
            return
        group = _Group(self, name, self.doctor.step)
        for t in tracked:
            sentinel = self.doctor.track(t, "output", name)
            if sentinel is not None:
                group.add(sentinel)
                self._keep(sentinel)

    def _keep(self, sentinel: Sentinel | None) -> None:
        if sentinel is not None:
            self.alive.append(weakref.ref(sentinel))

    def on_iteration(self, step: int) -> None:
        self.alive = [r for r in self.alive if r() is not None]
        old = [s for s in (r() for r in self.alive) if s is not None and s.step <= step - 1]
        reused = [s for s in old if any(u > s.step for u in s.used)]
        if len({s.step for s in reused}) >= self.KEEP:
            self.doctor.found("PIT103", reused[0].site or "backward",
                              f"the graph keeps growing: backward at step {step} ran through graphs built "
                              f"{step - min(s.step for s in reused)} steps earlier (state carried across steps "
                              f"without .detach(), e.g. an RNN hidden state)",
                              step=step)
            return
        kept = [s for s in old if s not in reused and (s.kind == "loss" or s.used)]  # unused outputs: PIT201
        if len({s.step for s in kept}) >= self.KEEP:
            site = kept[-1].site
            self.doctor.found(self.code, site or "loss",
                              f"graphs of {len({s.step for s in kept})} earlier steps are still alive at step {step} "
                              f"(the {kept[-1].kind} of `{site}` is kept: a list, a running total or an attribute "
                              f"holds it with its graph); memory grows every step", step=step)

    def forward_unused(self, name: str, step: int) -> None:
        self.unused.setdefault(name, []).append(step)

    def on_finish(self) -> None:
        for group in list(self.groups):
            if not group.used:
                self.forward_unused(group.name, group.step)
        self.groups.clear()
        for name, steps in self.unused.items():
            mode = self.modes.get(name, "train")
            extra = "" if mode == "eval" else " (in train mode)"
            self.doctor.found("PIT201", name,
                              f"{len(steps)} forward pass(es) of `{name}`{extra} recorded autograd graphs that no "
                              f"backward used", step=steps[0])
            if ("PIT201", name) in self.doctor.findings:
                self.doctor.findings[("PIT201", name)].count = len(steps)


class _Group:
    """The sentinels of one forward's outputs: used once a backward runs through any of them;
    reported unused when all of them die without that (or at the end)."""

    def __init__(self, tracker: GraphTracker, name: str, step: int) -> None:
        self.tracker, self.name, self.step = tracker, name, step
        self.refs: list[weakref.ref[Sentinel]] = []
        self.used = False
        tracker.groups.add(self)

    def add(self, sentinel: Sentinel) -> None:
        sentinel.group = self
        self.refs.append(weakref.ref(sentinel, self._died))

    def _died(self, ref: weakref.ref[Sentinel]) -> None:
        if self in self.tracker.groups and all(r() is None for r in self.refs):
            self.tracker.groups.discard(self)
            if not self.used:
                self.tracker.forward_unused(self.name, self.step)


class RetainGraph(Check):
    """PIT103: ``backward(retain_graph=True)`` although no later backward runs over that graph.

    After a retaining backward, a marker prehook goes on every node of its graph (parameters'
    AccumulateGrad nodes excepted: every graph shares those). If that call site runs again and
    no backward has touched the previous graph, the retention was for nothing; twice in a row is
    a finding."""

    code = "PIT103"
    CAP = 20_000  # nodes marked per graph

    def __init__(self) -> None:
        self.marks: dict[str, list[Any]] = {}  # site -> [marker] of the last retained graph
        self.wasted: dict[str, int] = {}

    def on_backward_done(self, tensors: list[torch.Tensor], retain_graph: bool, site: str) -> None:
        if not retain_graph:
            return
        previous = self.marks.get(site)
        if previous is not None:
            self.wasted[site] = 0 if previous[0].used else self.wasted.get(site, 0) + 1
            if self.wasted[site] >= 2:
                self.doctor.found(self.code, site,
                                  f"backward(retain_graph=True) at `{site}` keeps each step's graph, but no second "
                                  f"backward runs over it: the saved activations are held for nothing")
        marker = Sentinel("retained", self.doctor.step, site)
        seen: set[int] = set()
        stack = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while stack and len(seen) < self.CAP:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if type(node).__name__ != "AccumulateGrad":
                node.register_prehook(marker)
            stack.extend(n for n, _ in node.next_functions)
        self.marks[site] = [marker]


class TrainingWithoutGrad(Check):
    """PIT104: a training step whose forward ran with autograd off (and, for PIT109, which
    autograd-off forwards were evaluation)."""

    code = "PIT104"
    codes = ("PIT104", "PIT109")

    def __init__(self) -> None:
        self.nograd_train: list[str] = []  # roots forwarded in train mode with grad off this step
        self.backward_seen = False

    def on_root_forward(self, module: nn.Module, output: Any, grad: bool) -> None:
        if not grad and module.training:
            self.nograd_train.append(self.doctor.name_of(module))

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        self.backward_seen = True
        if any(isinstance(t, torch.Tensor) and not t.requires_grad for t in tensors):
            where = ("under torch.inference_mode()" if torch.is_inference_mode_enabled() else
                     "under torch.no_grad()" if not torch.is_grad_enabled() else "")
            cause = (f"the forward of `{self.nograd_train[-1]}` ran with autograd off" if self.nograd_train
                     else f"backward is called {where}" if where else "the tensor was computed with autograd off "
                     "(no_grad/inference_mode, .detach(), or every parameter frozen)")
            self.doctor.found(self.code, site or "backward",
                              f"backward() on a tensor that does not require grad: {cause}")

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        has_grads = any(p.grad is not None for g in optimizer.param_groups for p in g["params"])
        if self.nograd_train and not self.backward_seen and not has_grads:
            self.doctor.found(self.code, self.nograd_train[-1],
                              f"the training forward of `{self.nograd_train[-1]}` ran under torch.no_grad() or "
                              f"torch.inference_mode() and optimizer.step() had no gradients: nothing was learned")
        if self.backward_seen or has_grads:
            self.doctor.eval_forwards.extend(self.nograd_train)  # forwards next to real training: evaluation
        self.nograd_train, self.backward_seen = [], False

    def on_finish(self) -> None:
        self.doctor.eval_forwards.extend(self.nograd_train)


class ParameterNotLearning(Check):
    """PIT105: optimizer parameters that never get a non-zero gradient or never change; trainable
    parameters that get gradients but are in no optimizer (the model rebuilt after its optimizer).
    Frozen parameters (requires_grad=False) are never flagged."""

    code = "PIT105"

    def __init__(self) -> None:
        self.nonzero: set[int] = set()
        self.got_grad: dict[int, int] = {}
        self.first: dict[int, tuple[list[torch.Tensor], torch.Tensor]] = {}
        self.steps: dict[int, int] = {}

    def on_grad(self, param: torch.Tensor) -> None:
        self.got_grad.setdefault(id(param), self.doctor.step)

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        self.steps[id(optimizer)] = self.steps.get(id(optimizer), 0) + 1
        if id(optimizer) not in self.first:
            params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
            if params:
                with torch.no_grad():
                    norms = torch.stack([n.float() for n in torch._foreach_norm([p.detach() for p in params])])
                self.first[id(optimizer)] = (params, norms)

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        self.nonzero.update(id(p) for p, n in zip(params, norms, strict=True) if n != 0.0)

    def on_finish(self) -> None:
        doctor = self.doctor
        in_optimizer: set[int] = set()
        for opt in doctor.optimizers_alive():
            params = [p for g in opt.param_groups for p in g["params"]]
            in_optimizer.update(id(p) for p in params)
            steps = self.steps.get(id(opt), 0)
            if steps < 2:
                continue
            label = doctor.optimizer_label(opt)
            never = [doctor.name_of(p) for p in params if p.requires_grad and id(p) not in self.nonzero]
            if never:
                doctor.found(self.code, label, f"{len(never)} parameter(s) of {label} never received a non-zero "
                             f"gradient in {steps} steps: {_and_more(never)} (not used in the loss, or detached "
                             f"from it)", step=1)
            first = self.first.get(id(opt))
            if first is not None:
                with torch.no_grad():
                    now = torch.stack([n.float() for n in torch._foreach_norm([p.detach() for p in first[0]])])
                same = (now == first[1]).tolist()
                frozen = [doctor.name_of(p) for p, s in zip(first[0], same, strict=True) if s and id(p) in self.nonzero]
                if frozen:
                    doctor.found(self.code, f"{label} (unchanged)", f"{len(frozen)} parameter(s) got gradients but "
                                 f"never changed in {steps} steps of {label}: {_and_more(frozen)} (learning rate 0?)",
                                 step=1)
        if not doctor.optimizers_alive():
            return
        orphans = [(doctor.name_of(p), self.got_grad[id(p)]) for r in doctor.roots_alive()
                   for p in r.parameters() if p.requires_grad and id(p) in self.got_grad and id(p) not in in_optimizer]
        if orphans:
            names = [n for n, _ in orphans]
            doctor.found(self.code, names[0].split(".")[0], f"{len(names)} trainable parameter(s) received gradients "
                         f"but are in no optimizer: {_and_more(names)}; was the model rebuilt (or moved with .to() "
                         f"creating new tensors) after its optimizer was created?", step=min(s for _, s in orphans))


class NonFinite(Check):
    """PIT106: NaN/Inf in the loss, a gradient or an activation, with the first place it appears.

    The loss is read at backward (every step on CPU; every ``sync_every`` steps on CUDA). A
    non-finite loss read right away replays the root's last forward on the same inputs with a
    finiteness check on every module output (no autograd; buffers and RNG state restored), which
    names the first module in forward order. Gradients: the first non-finite parameter in
    backward order. Later forwards are checked module by module (``doctor.localize``)."""

    code = "PIT106"

    def __init__(self) -> None:
        self.located = False

    def on_loss(self, step: int, value: float, site: str) -> None:
        if math.isfinite(value):
            return
        self.doctor.found(self.code, "loss", f"the loss is {value} at step {step} (backward at `{site}`)", step=step)
        if not self.located and step == self.doctor.step:
            self._replay()
        self.doctor.localize = True

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        bad = {id(p) for p, n in zip(params, norms, strict=True) if not math.isfinite(n)}
        if not bad:
            return
        order = [i for i in dict.fromkeys(self.doctor.backward_order) if i in bad] or list(bad)
        by_id = {id(p): p for p in params}
        first = self.doctor.name_of(by_id[order[0]])
        guard = " (guard: the step was skipped)" if step in self.doctor.skipped_steps else ""
        self.doctor.found(self.code, first, f"non-finite gradient at step {step}: `{first}` is the first of "
                          f"{len(bad)} parameter(s) in backward order{guard}", step=step)
        self.doctor.localize = True

    def on_module_forward(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        if not self.doctor.localize or self.located:
            return
        self._check(module, inputs, output, self.doctor.step, replay=False)

    def _check(self, module: nn.Module, inputs: tuple[Any, ...], output: Any, step: int, replay: bool) -> bool:
        outs = [t for t in _tensors(output) if t.is_floating_point()]
        if not outs or all(bool(torch.isfinite(t).all()) for t in outs):
            return False
        name = self.doctor.name_of(module)
        ins = [t for t in _tensors(inputs) if t.is_floating_point()]
        params = [n for n, p in module.named_parameters(recurse=False) if not bool(torch.isfinite(p).all())]
        if params:
            why = f"its parameter(s) {', '.join(params)} are already non-finite (an earlier update)"
        elif ins and not all(bool(torch.isfinite(t).all()) for t in ins):
            why = "its input is already non-finite: the input batch (or code outside modules) brought it"
        else:
            why = "its inputs and parameters are finite: this module produced it"
        how = "replaying the forward" if replay else "checking each module output"
        self.doctor.found(self.code, name, f"first non-finite activation in forward order at step {step} "
                          f"({how}): `{name}` ({type(module).__name__}); {why}", step=step)
        self.located = True
        return True

    def _replay(self) -> None:
        for root in self.doctor.roots_alive():
            kept = self.doctor.last_inputs.get(id(root))
            if kept is not None and self._replay_root(root, *kept):
                return

    def _replay_root(self, root: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Run ``root`` again on its last inputs, checking every leaf output; True when found."""
        doctor, step, found = self.doctor, self.doctor.step, []
        buffers = {k: b.detach().clone() for k, b in root.named_buffers()}
        cpu_rng = torch.get_rng_state()
        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        cuda_rng = torch.cuda.get_rng_state_all() if cuda else None

        def hook(mod: nn.Module, inputs: tuple[Any, ...], out: Any) -> None:
            if not found and not mod._modules and self._check(mod, inputs, out, step, replay=True):
                found.append(mod)

        handles = [m.register_forward_hook(hook) for m in root.modules()]
        subs, doctor._subs = doctor._subs, {}  # the replay is not part of the run: no events
        try:
            with torch.no_grad():
                root(*args, **kwargs)
        except Exception as exc:
            doctor.internal.append(f"replaying the forward to find the first non-finite module failed: {exc}")
        finally:
            doctor._subs = subs
            for h in handles:
                h.remove()
            with torch.no_grad():
                for k, b in root.named_buffers():
                    if k in buffers:
                        b.copy_(buffers[k])
            torch.set_rng_state(cpu_rng)
            if cuda_rng is not None:
                torch.cuda.set_rng_state_all(cuda_rng)
        return bool(found)


class GradNormAnomaly(Check):
    """PIT107: the total gradient norm spikes far above its running median, or vanishes for
    several steps; layers whose norm jumped most are named."""

    code = "PIT107"
    WARMUP, WINDOW, SPIKE, FLOOR, VANISH_STEPS = 10, 50, 10.0, 1e-8, 5

    def __init__(self) -> None:
        self.history: deque[float] = deque(maxlen=self.WINDOW)
        self.layer_ema: dict[int, float] = {}
        self.tiny = 0

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        finite = [n for n in norms if math.isfinite(n)]
        if len(finite) < len(norms):
            return  # non-finite: PIT106's business
        total = math.sqrt(sum(n * n for n in finite))
        label = self.doctor.optimizer_label(optimizer)
        if len(self.history) >= self.WARMUP:
            median = statistics.median(self.history)
            if median > 0 and total > self.SPIKE * median:
                jumps = sorted(((n / max(self.layer_ema.get(id(p), n), 1e-30), self.doctor.name_of(p))
                                for p, n in zip(params, norms, strict=True)), reverse=True)[:3]
                layers = ", ".join(f"`{name}` {ratio:.0f}x" for ratio, name in jumps)
                self.doctor.found(self.code, label, f"gradient norm {total:.3g} at step {step} is "
                                  f"{total / median:.0f}x its running median {median:.3g} (largest jumps: {layers})",
                                  step=step)
        self.tiny = self.tiny + 1 if total < self.FLOOR else 0
        if self.tiny == self.VANISH_STEPS:
            self.doctor.found(self.code, f"{label} (vanishing)", f"gradient norm below {self.FLOOR:g} for "
                              f"{self.VANISH_STEPS} steps in a row (step {step}: {total:.2g}): gradients vanish",
                              step=step, fix="check initialisation, normalisation layers, saturating activations "
                              "and the loss scale; a learning-rate or clipping change will not help")
        self.history.append(total)
        for p, n in zip(params, norms, strict=True):
            prev = self.layer_ema.get(id(p))
            self.layer_ema[id(p)] = n if prev is None else 0.9 * prev + 0.1 * n


class DeadActivations(Check):
    """PIT108: a ReLU-family module that outputs zero for >= 99% of elements over many sampled
    training steps (every step for the first 10, then every 10th; one count_nonzero each)."""

    code = "PIT108"
    KINDS = (nn.ReLU, nn.ReLU6, nn.Hardtanh, nn.Threshold)
    MIN_SAMPLES, DEAD = 10, 0.99

    def __init__(self) -> None:
        self.pending: dict[int, list[torch.Tensor]] = {}
        self.zero: dict[int, list[float]] = {}
        self.modules: dict[int, weakref.ref[nn.Module]] = {}

    def on_module_forward(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        if not isinstance(module, self.KINDS) or not torch.is_grad_enabled() or not module.training:
            return
        step = self.doctor.step
        if step > 10 and step % 10:
            return
        if isinstance(output, torch.Tensor) and output.numel():
            self.modules[id(module)] = weakref.ref(module)
            self.pending.setdefault(id(module), []).append(1.0 - torch.count_nonzero(output) / output.numel())

    def on_sync(self) -> None:
        for key, values in self.pending.items():
            self.zero.setdefault(key, []).extend(torch.stack(values).cpu().tolist())
        self.pending = {}

    def on_finish(self) -> None:
        self.on_sync()
        for key, zeros in self.zero.items():
            module = self.modules[key]()
            if module is None or len(zeros) < self.MIN_SAMPLES:
                continue
            share = sum(zeros) / len(zeros)
            if share >= self.DEAD:
                name = self.doctor.name_of(module)
                self.doctor.found(self.code, name, f"`{name}` output zero for {share:.1%} of elements over "
                                  f"{len(zeros)} sampled training steps: its units are dead and never learn", step=1)


class WrongModuleMode(Check):
    """PIT109: an optimizer step after a training forward in eval mode (dropout / batch-norm
    behave as at inference), or evaluation (forwards with autograd off next to real training,
    or at the end) run in train mode."""

    code = "PIT109"

    def __init__(self) -> None:
        self.eval_training: list[str] = []

    def on_root_forward(self, module: nn.Module, output: Any, grad: bool) -> None:
        if grad and not module.training and _mode_dependent(module):
            self.eval_training.append(self.doctor.name_of(module))

    def on_step(self, optimizer: torch.optim.Optimizer) -> None:
        for name in dict.fromkeys(self.eval_training):
            self.doctor.found(self.code, name, f"optimizer.step() after a training forward of `{name}` in eval mode: "
                              "its dropout / batch-norm layers behaved as at inference (call model.train())")
        self.eval_training = []

    def on_sync(self) -> None:
        self._evals()

    def on_finish(self) -> None:
        self._evals()

    def _evals(self) -> None:
        doctor = self.doctor
        for name in dict.fromkeys(doctor.eval_forwards):
            module = next((m for m in doctor.roots_alive() if doctor.name_of(m) == name), None)
            if module is not None and _mode_dependent(module):
                doctor.found(self.code, f"{name} (evaluation)", f"`{name}` ran forwards with autograd off (evaluation) "
                             f"in train mode: dropout is active and batch-norm uses and updates batch statistics "
                             f"(call model.eval() before evaluating)",
                             fix="call model.eval() before evaluation and model.train() after it")
        doctor.eval_forwards.clear()


def _mode_dependent(module: nn.Module) -> bool:
    return any(isinstance(m, MODE_DEPENDENT) for m in module.modules())


class NonScalarBackward(Check):
    """PIT110: backward() on a non-scalar tensor without gradient=."""

    code = "PIT110"

    def on_backward(self, tensors: list[torch.Tensor], gradients: list[Any], retain_graph: bool, site: str) -> None:
        for t, g in zip(tensors, gradients, strict=False):
            if isinstance(t, torch.Tensor) and g is None and t.numel() != 1:
                self.doctor.found(self.code, site or "backward",
                                  f"backward() on a tensor of shape {tuple(t.shape)} without gradient=: reduce it "
                                  f"first (a loss with reduction='none'?)")


class InputStall(Check):
    """PIT402: the share of step time spent waiting for the DataLoader (first two steps excluded:
    workers start up), warned about at >= 20%."""

    code = "PIT402"
    SKIP, MIN_STEPS, SHARE = 2, 3, 0.2

    def __init__(self) -> None:
        self.wait = 0.0
        self.batches = 0
        self.last: float | None = None
        self.waits: list[float] = []
        self.spans: list[float] = []

    def on_data(self, wait_s: float) -> None:
        self.wait += wait_s
        self.batches += 1

    def on_iteration(self, step: int) -> None:
        import time

        now = time.perf_counter()
        if self.last is not None and step > self.SKIP:
            self.waits.append(self.wait)
            self.spans.append(now - self.last)
        self.last, self.wait = now, 0.0

    def share(self) -> float | None:
        if not self.batches or len(self.spans) < self.MIN_STEPS or sum(self.spans) <= 0:
            return None
        return sum(self.waits) / sum(self.spans)

    def on_finish(self) -> None:
        share = self.share()
        self.doctor.data_share = share
        if share is not None and share >= self.SHARE:
            self.doctor.found(self.code, "DataLoader", f"{share:.0%} of each step was spent waiting for the next "
                              f"batch (over {len(self.spans)} steps, measured): the model sits idle",
                              step=self.SKIP + 1)


def default_checks() -> list[Check]:
    """One instance of every run-time check."""
    return [StaleGradients(), GraphTracker(), RetainGraph(), TrainingWithoutGrad(), ParameterNotLearning(),
            NonFinite(), GradNormAnomaly(), DeadActivations(), WrongModuleMode(), NonScalarBackward(), InputStall()]
