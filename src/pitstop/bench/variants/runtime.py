"""The runtime axis: torch, or ONNX Runtime on the exported fp32 graph (needs ``pitstop[onnx]``;
combines with no torch technique but dynamic int8, which ONNX Runtime applies to the exported
graph). The recipe's export, quantization and session code is in ``code.py``."""

from __future__ import annotations

from pitstop.bench.variants.base import Axes, Target, Technique

CHOICES = ("torch", "onnxruntime")


class Runtime(Technique):
    """ONNX Runtime on the exported graph (the export and session code live in ``code.py``)."""

    axis = "runtime"
    choices = CHOICES

    def gate(self, config: Axes, target: Target) -> str | None:
        if config.runtime == "torch":
            return None
        if config.runtime not in CHOICES:
            return f"unknown runtime {config.runtime!r}"
        if not target.ort_providers or not target.onnx_installed:
            return 'ONNX Runtime needs onnx and onnxruntime: pip install "pitstop[onnx]"'
        others = [v for v in (config.precision != "fp32" and config.precision, config.compile,
                              config.layout) if v]
        if others:
            return f"ONNX Runtime runs the exported fp32 graph; it does not combine with {', '.join(others)}"
        if config.quant and target.device != "cpu":
            return "ONNX Runtime's dynamic int8 runs on CPU only"
        if target.device == "cuda" and "CUDAExecutionProvider" not in target.ort_providers:
            return "this onnxruntime has no CUDAExecutionProvider (pip install onnxruntime-gpu)"
        return None
