"""The quantization axis: dynamic int8, each layer type by the API that handles it best, CPU only.

- ``nn.LSTM`` / ``nn.GRU``: ``torch.ao.quantization.quantize_dynamic`` (torchao does not quantize
  recurrent layers: on a 2-layer GRU text classifier, torchao's int8 left the GRU in fp32 and ran
  slower than fp32, while dynamic int8 of the GRU itself was the fastest answer).
- ``nn.Linear``: torchao's ``Int8DynamicActivationInt8WeightConfig`` where torchao is installed and
  the model is compiled (its int8 kernels come from inductor); in eager, torchao's int8 tensors
  are far slower than ``torch.ao``'s packed kernels (an MLP 1024-2048-2048-1024, batch 16, 2
  threads, our x86 CPU without VNNI: 211 ms/batch torchao eager, 62 fp32, 14 ``torch.ao``; compiled,
  torchao 10.7 vs ``torch.ao`` 5.3), so eager Linear layers go to ``torch.ao``. The search measures
  both the eager and the compiled int8 candidates, so the faster path wins on each CPU.
- With ONNX Runtime (``int8-dynamic+onnxruntime``): ``onnxruntime.quantization.quantize_dynamic``
  on the exported graph (the code is in ``code.py``).

``layer_apis`` is the per-type choice; the row's details and the recipe record it."""

from __future__ import annotations

from pitstop.bench.variants.base import Axes, Code, Target, Technique

CHOICES = (None, "int8-dynamic")
LAYERS = ("Linear", "LSTM", "GRU")  # the module types dynamic int8 quantizes
TORCHAO = "torchao.quantization.quantize_"
TORCH_AO = "torch.ao.quantization.quantize_dynamic"
ORT = "onnxruntime.quantization.quantize_dynamic"


def layer_apis(config: Axes, target: Target) -> dict[str, str]:
    """Each quantizable module type of the model -> the API that quantizes it in this config."""
    layers = target.quant_layers or (("Linear",) if target.quantizable else ())
    if config.runtime == "onnxruntime":
        return {layer: ORT for layer in layers}
    torchao_linear = target.quant_api == "torchao" and bool(config.compile)
    return {layer: TORCHAO if layer == "Linear" and torchao_linear else TORCH_AO for layer in layers}


class Quant(Technique):
    """Dynamic int8 quantization of the Linear / LSTM / GRU layers, per layer type."""

    axis = "quant"
    choices = CHOICES

    def gate(self, config: Axes, target: Target) -> str | None:
        if config.quant is None:
            return None
        if config.quant not in CHOICES:
            return f"unknown quantization {config.quant!r}"
        if target.device != "cpu":
            return "dynamic int8 quantization runs on CPU only"
        if not target.quantizable:
            return "the model has no Linear / LSTM / GRU layers to quantize"
        if config.runtime == "onnxruntime":
            return None  # ONNX Runtime's own int8 kernels
        if config.precision == "bf16-weights" and TORCH_AO in layer_apis(config, target).values():
            return ("torch.ao's dynamic int8 quantizes fp32 weights only (\"expected scalar type Float but found "
                    "BFloat16\"); with bf16 weights only torchao's compiled int8 of Linear layers runs")
        import torch

        if not {"x86", "fbgemm", "onednn", "qnnpack"} & set(torch.backends.quantized.supported_engines):
            return "this torch build has no quantized engine (x86 / fbgemm / onednn / qnnpack)"
        return None

    def code(self, config: Axes, target: Target) -> Code:
        if config.quant is None:
            return Code()
        apis = layer_apis(config, target)
        used = list(dict.fromkeys(apis.values()))
        details = {"quant_api": " + ".join(used), "quant_layers": apis}
        if config.runtime == "onnxruntime":
            return Code(details=details)  # code.py quantizes the exported graph
        code = Code(details=details)
        if TORCHAO in used:
            code.imports.append("from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_")
            code.setup.append("quantize_(model, Int8DynamicActivationInt8WeightConfig())  # Linear: torchao, in place")
        eager = [layer for layer, api in apis.items() if api == TORCH_AO]
        if eager:
            types = ", ".join(f"torch.nn.{layer}" for layer in eager)
            code.setup += [f"model = torch.ao.quantization.quantize_dynamic(  # {', '.join(eager)}: torch.ao",
                           f"    model, {{{types}}}, dtype=torch.qint8)"]
        return code
