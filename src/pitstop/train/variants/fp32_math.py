"""fp32 speed on a GPU without a lower precision: TF32 (fp32 matmuls and convolutions on tensor
cores, 10 bits of mantissa: the torch 2.13 precision API) and ``cudnn.benchmark`` (cuDNN times
its convolution algorithms once per input shape and keeps the fastest: for fixed-shape convnets).
Both are CUDA settings: on a CPU there is nothing to switch."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget

TF32 = ['torch.backends.cuda.matmul.fp32_precision = "tf32"  # fp32 matmuls on TF32 tensor cores',
        'torch.backends.cudnn.conv.fp32_precision = "tf32"']
BENCHMARK = ["torch.backends.cudnn.benchmark = True  # cuDNN picks the fastest convolution for each shape"]


class Fp32Math(Technique):
    axis = "tf32"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.tf32 and target.device != "cuda":
            return "TF32 is a CUDA tensor-core format: a CPU computes fp32 as it is"
        if config.cudnn_benchmark and target.device != "cuda":
            return "cudnn.benchmark chooses cuDNN's convolution algorithms: CUDA only"
        if config.cudnn_benchmark and not target.has_4d_input:
            return "cudnn.benchmark chooses convolution algorithms: the model takes no image-shaped (4-D) input"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        return Code(setup=(TF32 if config.tf32 else []) + (BENCHMARK if config.cudnn_benchmark else []))
