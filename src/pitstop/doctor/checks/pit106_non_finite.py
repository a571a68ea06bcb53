"""PIT106 non-finite."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from pitstop.doctor.check import Check
from pitstop.doctor.checks.common import tensors


class NonFinite(Check):
    """PIT106: NaN/Inf in the loss, a gradient or an activation, with the first place it appears.

    The loss is read at backward (every step on CPU; every ``sync_every`` steps on CUDA). A
    non-finite loss read right away replays the root's last forward on the same inputs with a
    finiteness check on every module output (no autograd, no events; buffers and RNG state
    restored), which names the first module in forward order. Gradients: the first non-finite
    parameter in the session's backward order. Once something non-finite was seen, later
    forwards are checked module by module (``localize``)."""

    code = "PIT106"

    def __init__(self) -> None:
        self.located = False
        self.localize = False  # per-module finiteness checks, once something non-finite was seen
        self.skipped: list[int] = []  # steps guard skipped

    def on_loss(self, step: int, value: float, site: str) -> None:
        if math.isfinite(value):
            return
        self.found(self.code, "loss", f"the loss is {value} at step {step} (backward at `{site}`)", step=step)
        if not self.located and step == self.session.step:
            self._replay()
        self.localize = True

    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        bad = {id(p) for p, n in zip(params, norms, strict=True) if not math.isfinite(n)}
        if not bad:
            return
        order = [i for i in dict.fromkeys(self.session.backward_order) if i in bad] or list(bad)
        first = self.name_of({id(p): p for p in params}[order[0]])
        guard = " (guard: the step was skipped)" if step in self.skipped else ""
        self.found(self.code, first, f"non-finite gradient at step {step}: `{first}` is the first of "
                   f"{len(bad)} parameter(s) in backward order{guard}", step=step)
        self.localize = True

    def on_skipped(self, step: int) -> None:
        self.skipped.append(step)

    def on_module_forward(self, module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        if self.localize and not self.located:
            self._check(module, inputs, output, self.session.step, replay=False)

    def _check(self, module: nn.Module, inputs: tuple[Any, ...], output: Any, step: int, replay: bool) -> bool:
        outs = [t for t in tensors(output) if t.is_floating_point()]
        if not outs or all(bool(torch.isfinite(t).all()) for t in outs):
            return False
        name = self.name_of(module)
        ins = [t for t in tensors(inputs) if t.is_floating_point()]
        params = [n for n, p in module.named_parameters(recurse=False) if not bool(torch.isfinite(p).all())]
        if params:
            why = f"its parameter(s) {', '.join(params)} are already non-finite (an earlier update)"
        elif ins and not all(bool(torch.isfinite(t).all()) for t in ins):
            why = "its input is already non-finite: the input batch (or code outside modules) brought it"
        else:
            why = "its inputs and parameters are finite: this module produced it"
        how = "replaying the forward" if replay else "checking each module output"
        self.found(self.code, name, f"first non-finite activation in forward order at step {step} "
                   f"({how}): `{name}` ({type(module).__name__}); {why}", step=step)
        self.located = True
        return True

    def _replay(self) -> None:
        for root in self.session.roots_alive():
            kept = self.session.last_inputs.get(id(root))
            if kept is not None and self._replay_root(root, *kept):
                return

    def _replay_root(self, root: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Run ``root`` again on its last inputs, checking every leaf output; True when found."""
        step, found = self.session.step, list[nn.Module]()
        buffers = {k: b.detach().clone() for k, b in root.named_buffers()}
        cpu_rng = torch.get_rng_state()
        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        cuda_rng = torch.cuda.get_rng_state_all() if cuda else None

        def hook(mod: nn.Module, inputs: tuple[Any, ...], out: Any) -> None:
            if not found and not mod._modules and self._check(mod, inputs, out, step, replay=True):
                found.append(mod)

        handles = [m.register_forward_hook(hook) for m in root.modules()]
        try:
            with self.session.paused(), torch.no_grad():  # the replay is not part of the run: no events
                root(*args, **kwargs)
        except Exception as exc:
            self.session.warn(f"replaying the forward to find the first non-finite module failed: {exc}")
        finally:
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
