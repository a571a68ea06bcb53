"""Precision: bf16 autocast where the hardware has native bf16; fp16 autocast with a GradScaler
on CUDA (fp16 gradients underflow without loss scaling). Weights and optimizer state stay fp32."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget


class Precision(Technique):
    axis = "precision"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        why = emulated(config, target)
        return None if why is None or target.allow_emulated else f"{why} (--allow-emulated measures it anyway)"

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        if config.precision == "fp32":
            return Code()
        dtype = "bfloat16" if config.precision.startswith("bf16") else "float16"
        code = Code(contexts=[f"torch.autocast({target.device!r}, dtype=torch.{dtype})"])
        if config.precision == "fp16-autocast":
            code.scaler = f"torch.amp.GradScaler({target.device!r})  # fp16 gradients underflow without scaling"
        return code


def emulated(config: TrainConfig, target: TrainTarget) -> str | None:
    """Why ``config``'s precision is only emulated on ``target``'s hardware, or None (native, or fp32)."""
    if config.precision == "fp16-autocast" and target.device != "cuda":
        return "fp16 autocast with a GradScaler needs CUDA; on CPU fp16 matmuls are emulated and slow"
    if config.precision == "bf16-autocast" and not target.native_bf16:
        where = "this GPU" if target.device == "cuda" else "this CPU (no avx512_bf16 / amx_bf16)"
        return f"{where} has no native bf16; it would be emulated and slower"
    return None
