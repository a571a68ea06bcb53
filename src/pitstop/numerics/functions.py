"""Numerically stable autograd Functions: log-sum-exp (shifted by the maximum) and a straight-through
estimator for rounding (fake quantization)."""

from __future__ import annotations

from typing import Any

import torch


class LogSumExp(torch.autograd.Function):
    """log(sum(exp(x))) along ``dim``, shifted by the maximum so that exp never overflows; the
    gradient is softmax(x), computed as exp(x - result) (finite wherever the result is)."""

    @staticmethod
    def forward(x: torch.Tensor, dim: int, keepdim: bool) -> torch.Tensor:
        m = x.amax(dim=dim, keepdim=True)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # all -inf (or inf) rows: no shift
        out = m + (x - m).exp().sum(dim=dim, keepdim=True).log()
        return out if keepdim else out.squeeze(dim)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        x, dim, keepdim = inputs
        ctx.dim, ctx.keepdim = dim, keepdim
        ctx.save_for_backward(x, output)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None]:
        x, out = ctx.saved_tensors
        if not ctx.keepdim:
            out, grad = out.unsqueeze(ctx.dim), grad.unsqueeze(ctx.dim)
        return grad * (x - out).exp(), None, None  # differentiable: gradgradcheck works


def logsumexp(x: torch.Tensor, dim: int = -1, keepdim: bool = False) -> torch.Tensor:
    """Stable ``log(sum(exp(x), dim))`` (equals ``torch.logsumexp`` where that is finite)."""
    return LogSumExp.apply(x, dim, keepdim)


class StraightThroughRound(torch.autograd.Function):
    """Symmetric per-tensor fake quantization to ``bits`` bits (scale = max|x| / (2^(bits-1) - 1)),
    with the straight-through gradient: identity (a deliberate approximation of a step function)."""

    @staticmethod
    def forward(x: torch.Tensor, bits: int) -> torch.Tensor:
        levels = 2 ** (bits - 1) - 1
        scale = x.detach().abs().amax() / levels
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        return torch.round(x / scale).clamp(-levels, levels) * scale

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        pass

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def straight_through_round(x: torch.Tensor, bits: int = 8) -> torch.Tensor:
    """Round ``x`` to a ``bits``-bit symmetric grid; gradients pass straight through."""
    if not 2 <= int(bits) <= 62:
        raise ValueError(f"bits must be between 2 and 62, got {bits}")
    return StraightThroughRound.apply(x, int(bits))
