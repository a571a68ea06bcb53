"""The quantization axis: dynamic int8 (torchao's ``quantize_`` when installed, else
``torch.ao.quantization.quantize_dynamic``) on Linear / LSTM / GRU layers, CPU only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pitstop.bench.variants.base import Code, Target, Technique

if TYPE_CHECKING:
    from pitstop.bench.variants.config import VariantConfig

CHOICES = (None, "int8-dynamic")


class Quant(Technique):
    """Dynamic int8 quantization of the Linear / LSTM / GRU layers."""

    axis = "quant"
    choices = CHOICES

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        if config.quant is None:
            return None
        if config.quant not in CHOICES:
            return f"unknown quantization {config.quant!r}"
        if target.device != "cpu":
            return "dynamic int8 quantization runs on CPU only"
        if not target.quantizable:
            return "the model has no Linear / LSTM / GRU layers to quantize"
        import torch

        if not {"x86", "fbgemm", "onednn", "qnnpack"} & set(torch.backends.quantized.supported_engines):
            return "this torch build has no quantized engine (x86 / fbgemm / onednn / qnnpack)"
        return None

    def code(self, config: VariantConfig, target: Target) -> Code:
        if config.quant is None:
            return Code()
        if target.quant_api == "torchao":
            return Code(
                imports=["from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_"],
                setup=["quantize_(model, Int8DynamicActivationInt8WeightConfig())  # Linear layers, in place"],
                details={"quant_api": "torchao.quantization.quantize_"})
        return Code(
            setup=["model = torch.ao.quantization.quantize_dynamic(",
                   "    model, {torch.nn.Linear, torch.nn.LSTM, torch.nn.GRU}, dtype=torch.qint8)"],
            details={"quant_api": "torch.ao.quantization.quantize_dynamic"})
