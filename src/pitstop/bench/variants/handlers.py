"""Techniques as config + handler pairs; the handlers write the recipe, and the recipe is what runs.

Each axis of ``VariantConfig`` has one handler. A handler does two things: ``gate`` says why a
value cannot run on this target (hardware, missing extra, incompatible axes), and ``code``
returns the Python lines that apply it. ``recipe_source`` assembles those lines into a
self-contained module (``apply(model)`` -> an ``nn.Module``) and ``build`` executes that very
source, so the paste-able recipe is, byte for byte, what was measured."""

from __future__ import annotations

import importlib.util
import linecache
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from pitstop.bench.variants.config import VariantConfig
from pitstop.models.inputs import Inputs


@dataclass(frozen=True)
class Target:
    """What the gates look at: the device, the CPU, the model's layers and inputs, the extras."""

    device: str = "cpu"
    cpu_flags: frozenset[str] = frozenset()
    physical_cores: int = 1
    has_4d_input: bool = False
    quantizable: bool = False  # has Linear / LSTM / GRU layers
    quant_api: str = "torch.ao"  # "torchao" when installed
    bf16_cuda: bool = False
    ort_providers: tuple[str, ...] = ()  # () = onnxruntime not installed
    onnx_installed: bool = False
    compiler: bool = True  # a C++ compiler for inductor's CPU kernels

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (crosses to worker processes)."""
        return {**asdict(self), "cpu_flags": sorted(self.cpu_flags), "ort_providers": list(self.ort_providers)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        """Inverse of ``to_dict``."""
        return cls(**{**data, "cpu_flags": frozenset(data["cpu_flags"]),
                      "ort_providers": tuple(data["ort_providers"])})

    @classmethod
    def detect(cls, device: str, module: nn.Module, input_dims: list[int]) -> Target:
        """The target as found here, for this model and its inputs."""
        import torch

        from pitstop._env import cpu_flags, physical_cores

        providers: tuple[str, ...] = ()
        if importlib.util.find_spec("onnxruntime") is not None:
            import onnxruntime

            providers = tuple(onnxruntime.get_available_providers())
        layers = (nn.Linear, nn.LSTM, nn.GRU)
        return cls(
            device="cuda" if device.startswith("cuda") else "cpu",
            cpu_flags=frozenset(cpu_flags()), physical_cores=physical_cores(),
            has_4d_input=4 in input_dims,
            quantizable=any(isinstance(m, layers) for m in module.modules()),
            quant_api="torchao" if importlib.util.find_spec("torchao") is not None else "torch.ao",
            bf16_cuda=device.startswith("cuda") and torch.cuda.is_bf16_supported(),
            ort_providers=providers, onnx_installed=importlib.util.find_spec("onnx") is not None,
            compiler=any(shutil.which(c) for c in ("g++", "c++", "clang++")),
        )

    @property
    def native_bf16(self) -> bool:
        """bf16 has hardware support (avx512_bf16 / AMX on CPU)."""
        if self.device == "cuda":
            return self.bf16_cuda
        return bool({"avx512_bf16", "amx_bf16"} & self.cpu_flags)


@dataclass
class Code:
    """One technique's contribution to the recipe."""

    imports: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)  # body of apply(model), in order
    inputs: list[str] = field(default_factory=list)  # body of prepare_input(t)
    contexts: list[str] = field(default_factory=list)  # `with` items around each call
    details: dict[str, Any] = field(default_factory=dict)  # what ran (e.g. the int8 API)


class Technique:
    """A handler: the gate and the code for one axis of the config."""

    axis = ""

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        """Why this config's value cannot run here, or None."""
        return None

    def code(self, config: VariantConfig, target: Target) -> Code:
        """The recipe lines that apply this config's value."""
        return Code()


class GradMode(Technique):
    axis = "grad"

    def code(self, config: VariantConfig, target: Target) -> Code:
        grad = {"grad": "torch.enable_grad()", "no_grad": "torch.no_grad()",
                "inference_mode": "torch.inference_mode()"}[config.grad]
        return Code(setup=[f"model.{config.mode}()"], contexts=[grad])


class Precision(Technique):
    axis = "precision"

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        if config.precision == "fp16-autocast" and target.device != "cuda":
            return "fp16 autocast needs CUDA; on CPU fp16 matmuls are emulated and slow"
        if config.precision.startswith("bf16") and not target.native_bf16:
            where = "this GPU" if target.device == "cuda" else "this CPU (no avx512_bf16 / amx_bf16)"
            return f"{where} has no native bf16; it would be emulated and slower"
        if config.precision not in ("fp32", "bf16-autocast", "fp16-autocast", "bf16-weights"):
            return f"unknown precision {config.precision!r}"
        return None

    def code(self, config: VariantConfig, target: Target) -> Code:
        if config.precision == "bf16-weights":
            return Code(setup=["model = model.to(torch.bfloat16)"],
                        inputs=["if t.is_floating_point():", "    t = t.to(torch.bfloat16)"])
        if config.precision.endswith("-autocast"):
            dtype = "bfloat16" if config.precision.startswith("bf16") else "float16"
            return Code(contexts=[f"torch.autocast({target.device!r}, dtype=torch.{dtype})"])
        return Code()


class Compile(Technique):
    axis = "compile"

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        if config.compile not in (None, "default", "max-autotune", "reduce-overhead"):
            return f"unknown compile mode {config.compile!r}"
        if config.compile == "reduce-overhead" and target.device != "cuda":
            return "reduce-overhead uses CUDA graphs; it needs CUDA"
        if config.compile and target.device == "cpu" and not target.compiler:
            return "torch.compile needs a C++ compiler (g++ or clang++) for CPU kernels; none found"
        return None

    def code(self, config: VariantConfig, target: Target) -> Code:
        if not config.compile:
            return Code()
        mode = "" if config.compile == "default" else f", mode={config.compile!r}"
        if target.device == "cpu" and config.mode == "eval" and config.grad != "grad":
            # inference on CPU: fold weights into the graph as constants, for this model only (options
            # are this compile's inductor settings; torch._inductor.config would change every later compile)
            options = '{"freezing": True}' if config.compile == "default" else \
                f'{{**torch._inductor.list_mode_options({config.compile!r}), "freezing": True}}'
            return Code(imports=[] if config.compile == "default" else ["import torch._inductor"],
                        setup=[f"model = torch.compile(model, options={options})"],
                        details={"inductor_freezing": True})
        return Code(setup=[f"model = torch.compile(model{mode})"])


class Quant(Technique):
    axis = "quant"

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        if config.quant is None:
            return None
        if config.quant != "int8-dynamic":
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


class Layout(Technique):
    axis = "layout"

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        if config.layout not in (None, "channels_last"):
            return f"unknown layout {config.layout!r}"
        if config.layout and not target.has_4d_input:
            return "channels_last applies to 4-D (image) inputs; this model has none"
        return None

    def code(self, config: VariantConfig, target: Target) -> Code:
        if not config.layout:
            return Code()
        return Code(setup=["model = model.to(memory_format=torch.channels_last)"],
                    inputs=["if t.dim() == 4:", "    t = t.contiguous(memory_format=torch.channels_last)"])


class Threads(Technique):
    axis = "threads"

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        if config.threads is not None and not 1 <= config.threads <= max(target.physical_cores, 1):
            return f"{config.threads} threads on {target.physical_cores} physical cores"
        return None


class Runtime(Technique):
    axis = "runtime"

    def gate(self, config: VariantConfig, target: Target) -> str | None:
        if config.runtime == "torch":
            return None
        if config.runtime != "onnxruntime":
            return f"unknown runtime {config.runtime!r}"
        if not target.ort_providers or not target.onnx_installed:
            return 'ONNX Runtime needs onnx and onnxruntime: pip install "pitstop[onnx]"'
        others = [v for v in (config.precision != "fp32" and config.precision, config.compile,
                              config.quant, config.layout) if v]
        if others:
            return f"ONNX Runtime runs the exported fp32 graph; it does not combine with {', '.join(others)}"
        if target.device == "cuda" and "CUDAExecutionProvider" not in target.ort_providers:
            return "this onnxruntime has no CUDAExecutionProvider (pip install onnxruntime-gpu)"
        return None


TECHNIQUES: tuple[Technique, ...] = (GradMode(), Precision(), Quant(), Layout(), Compile(), Threads(), Runtime())


def gate(config: VariantConfig, target: Target) -> str | None:
    """The first reason this config cannot run on this target, or None."""
    return next((r for r in (t.gate(config, target) for t in TECHNIQUES) if r), None)


def details(config: VariantConfig, target: Target) -> dict[str, Any]:
    """What the config's handlers record about how they ran (e.g. which int8 API)."""
    found: dict[str, Any] = {}
    for technique in TECHNIQUES:
        found.update(technique.code(config, target).details)
    return found


def recipe_source(config: VariantConfig, target: Target, threads: int, header: str = "") -> str:
    """A self-contained Python module that applies ``config`` to a model without pitstop."""
    from pitstop.bench.variants.code import render

    codes = [t.code(config, target) for t in TECHNIQUES]
    return render(config, target.device, threads, codes, header, ort=config.runtime == "onnxruntime")


def build(source: str, path: Path, name: str = "pitstop_recipe") -> dict[str, Any]:
    """Execute recipe source as if it were the file ``path`` (tracebacks show its lines)."""
    filename = str(path)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": name, "__file__": filename}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def apply(config: VariantConfig, target: Target, threads: int, module: nn.Module, example: Inputs,
          workdir: Path) -> tuple[nn.Module, dict[str, Any]]:
    """Apply ``config`` to ``module`` by running its recipe; returns the model and what ran."""
    source = recipe_source(config, target, threads)
    workdir.mkdir(parents=True, exist_ok=True)
    namespace = build(source, workdir / "recipe.py")
    fast = namespace["apply"](module, tuple(example.args), dict(example.kwargs))
    return fast, {**details(config, target), **namespace["DETAILS"]}

