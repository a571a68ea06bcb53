"""The precision axis: fp32, bf16 / fp16 autocast, or bf16 weights (inputs cast to match)."""

from __future__ import annotations

from pitstop.bench.variants.base import Axes, Code, Target, Technique

CHOICES = ("fp32", "bf16-autocast", "fp16-autocast", "bf16-weights")


class Precision(Technique):
    """Autocast around each call, or the weights (and floating inputs) cast to bf16."""

    axis = "precision"
    choices = CHOICES

    def gate(self, config: Axes, target: Target) -> str | None:
        if config.precision == "fp16-autocast" and target.device != "cuda":
            return "fp16 autocast needs CUDA; on CPU fp16 matmuls are emulated and slow"
        if config.precision.startswith("bf16") and not target.native_bf16:
            where = "this GPU" if target.device == "cuda" else "this CPU (no avx512_bf16 / amx_bf16)"
            return f"{where} has no native bf16; it would be emulated and slower"
        if config.precision not in CHOICES:
            return f"unknown precision {config.precision!r}"
        return None

    def code(self, config: Axes, target: Target) -> Code:
        if config.precision == "bf16-weights":
            return Code(setup=["model = model.to(torch.bfloat16)"],
                        inputs=["if t.is_floating_point():", "    t = t.to(torch.bfloat16)"])
        if config.precision.endswith("-autocast"):
            dtype = "bfloat16" if config.precision.startswith("bf16") else "float16"
            return Code(contexts=[f"torch.autocast({target.device!r}, dtype=torch.{dtype})"])
        return Code()
