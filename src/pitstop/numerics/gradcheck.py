"""A gradient check that says where it fails: ``gradcheck`` and ``gradgradcheck`` in float64, and
per input the worst element of the analytical vs numerical Jacobian."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from pitstop._document import Rendered


@dataclass
class InputCheck:
    """First-order check of one differentiable input: the worst Jacobian element."""

    index: int
    shape: tuple[int, ...]
    ok: bool
    max_abs_err: float
    worst: tuple[int, int] | None  # (output element, input element), flat indices
    analytical: float | None
    numerical: float | None

    def __str__(self) -> str:
        state = "ok" if self.ok else "FAILED"
        where = "" if self.worst is None else (f"; worst at output[{self.worst[0]}] / input[{self.worst[1]}]: "
                                               f"analytical {self.analytical:.6g} vs numerical {self.numerical:.6g}")
        return f"input {self.index} {list(self.shape)}: gradcheck {state} (max abs err {self.max_abs_err:.3g}{where})"


@dataclass
class GradientCheck(Rendered):
    """``gradcheck`` and ``gradgradcheck`` in float64, per input."""

    ok: bool
    gradcheck_ok: bool
    gradgradcheck_ok: bool | None  # None: skipped (first order failed)
    inputs: list[InputCheck] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    @property
    def details(self) -> list[str]:
        return [str(i) for i in self.inputs] + self.messages

    def __str__(self) -> str:
        return self.table().rstrip("\n")

    def to_dict(self, environment: dict[str, Any] | None = None, **about: Any) -> dict[str, Any]:
        """The JSON document (``kind: gradcheck``); ``about`` adds fields such as ``function``."""
        from pitstop._document import envelope

        return envelope("gradcheck", environment if environment is not None else {}, **about, ok=self.ok,
                        gradcheck=self.gradcheck_ok, gradgradcheck=self.gradgradcheck_ok,
                        inputs=[{"index": i.index, "shape": list(i.shape), "ok": i.ok, "max_abs_err": i.max_abs_err,
                                 "worst": list(i.worst) if i.worst else None, "analytical": i.analytical,
                                 "numerical": i.numerical} for i in self.inputs],
                        messages=self.messages)


def verify_gradients(fn: Callable[..., Any], *inputs: Any, eps: float = 1e-6, atol: float = 1e-5,
                     rtol: float = 1e-3, second_order: bool = True) -> GradientCheck:
    """Check ``fn``'s gradients on float64 copies of ``inputs`` (floating tensors get
    requires_grad): ``torch.autograd.gradcheck`` and ``gradgradcheck``, plus, per input, the
    worst element of analytical vs finite-difference Jacobians."""
    args = tuple(a.detach().to(torch.float64).requires_grad_(True) if isinstance(a, torch.Tensor)
                 and a.is_floating_point() else a for a in inputs)
    diff = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
    if not diff:
        raise ValueError("verify_gradients needs at least one floating-point tensor input")
    messages = []
    try:
        first = torch.autograd.gradcheck(fn, args, eps=eps, atol=atol, rtol=rtol, raise_exception=True)
    except Exception as exc:  # GradcheckError, or fn failing in float64
        first = False
        messages.append(f"gradcheck: {str(exc).strip().splitlines()[0][:300]}")
    try:
        per_input = [_jacobians(fn, args, i, eps, atol, rtol) for i in diff]
    except Exception as exc:  # fn itself fails in float64: reported, not raised
        per_input = []
        messages.append(f"the function raised {type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}")
        first = False
    second: bool | None = None
    if second_order and first:
        try:
            second = torch.autograd.gradgradcheck(fn, args, eps=eps, atol=atol, rtol=rtol, raise_exception=True)
        except Exception as exc:
            second = False
            messages.append(f"gradgradcheck: {str(exc).strip().splitlines()[0][:300]}")
    ok = bool(first) and all(i.ok for i in per_input) and second is not False
    return GradientCheck(ok, bool(first), second, per_input, messages)


def _outputs(fn: Callable[..., Any], args: tuple[Any, ...]) -> torch.Tensor:
    out = fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return torch.cat([o.reshape(-1) for o in outs if isinstance(o, torch.Tensor) and o.is_floating_point()])


def _jacobians(fn: Callable[..., Any], args: tuple[Any, ...], index: int, eps: float, atol: float, rtol: float
               ) -> InputCheck:
    x = args[index]
    with torch.enable_grad():
        out = _outputs(fn, args)
        analytical = torch.zeros(out.numel(), x.numel(), dtype=torch.float64)
        for row in range(out.numel()):
            (g,) = torch.autograd.grad(out[row], x, retain_graph=True, allow_unused=True)
            if g is not None:
                analytical[row] = g.reshape(-1)
    numerical = torch.zeros_like(analytical)
    flat = x.detach().reshape(-1)
    with torch.no_grad():  # noqa: PIT202 (x is perturbed in place; inference tensors would be overkill)
        for col in range(flat.numel()):
            saved = flat[col].item()
            flat[col] = saved + eps
            plus = _outputs(fn, args).detach().clone()
            flat[col] = saved - eps
            minus = _outputs(fn, args).detach()
            flat[col] = saved
            numerical[:, col] = (plus - minus) / (2 * eps)
    err = (analytical - numerical).abs()
    bad = err > atol + rtol * numerical.abs()
    if err.numel() == 0:
        return InputCheck(index, tuple(x.shape), True, 0.0, None, None, None)
    worst_flat = int(err.argmax())
    r, c = divmod(worst_flat, err.shape[1])
    return InputCheck(index, tuple(x.shape), not bool(bad.any()), float(err.max()), (r, c),
                      float(analytical[r, c]), float(numerical[r, c]))
