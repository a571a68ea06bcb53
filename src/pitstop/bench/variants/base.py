"""What every inference axis's handler shares: the ``Target`` its gate looks at, the ``Code`` it
contributes to the recipe, and the ``Technique`` base class (one subclass per axis, one file per axis).

Two bases, not one (training's are ``pitstop.train.variants.base``): an inference recipe is
``apply(model, example)`` returning a faster callable (a compiled module, an ONNX Runtime session),
and its gates read the CPU's flags, the quantizable layers and the installed runtimes; a training
recipe is ``apply(model) -> (model, optimizer)`` plus ``train_step``, with autocast contexts, a
GradScaler, the optimizer's implementation and micro-batches, and its gates read the optimizer's
flags, the batch and the DDP job. The two share the machine's facts (``pitstop._env``) and the
recipe machinery (``pitstop.engine.recipe``), not the shapes."""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from torch import nn


class Axes(Protocol):
    """What a handler reads of a variant (``VariantConfig`` has these fields). A protocol, so the
    handlers need not import the config, which imports them for their choices."""

    @property
    def mode(self) -> str: ...
    @property
    def grad(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def compile(self) -> str | None: ...
    @property
    def quant(self) -> str | None: ...
    @property
    def layout(self) -> str | None: ...
    @property
    def threads(self) -> int | None: ...
    @property
    def runtime(self) -> str: ...
    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class Target:
    """What the gates look at: the device, the CPU, the model's layers and inputs, the extras."""

    device: str = "cpu"
    cpu_flags: frozenset[str] = frozenset()
    physical_cores: int = 1
    has_4d_input: bool = False
    quantizable: bool = False  # has Linear / LSTM / GRU layers
    quant_api: str = "torch.ao"  # "torchao" when installed
    quant_layers: tuple[str, ...] = ()  # the quantizable module types present, of Linear / LSTM / GRU
    bf16_cuda: bool = False
    ort_providers: tuple[str, ...] = ()  # () = onnxruntime not installed
    onnx_installed: bool = False
    compiler: bool = True  # a C++ compiler for inductor's CPU kernels

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (crosses to worker processes)."""
        return {**asdict(self), "cpu_flags": sorted(self.cpu_flags), "ort_providers": list(self.ort_providers),
                "quant_layers": list(self.quant_layers)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        """Inverse of ``to_dict``."""
        return cls(**{**data, "cpu_flags": frozenset(data["cpu_flags"]),
                      "ort_providers": tuple(data["ort_providers"]),
                      "quant_layers": tuple(data.get("quant_layers", ()))})

    @classmethod
    def detect(cls, device: str, module: nn.Module, input_dims: list[int]) -> Target:
        """The target as found here, for this model and its inputs."""
        import torch

        from pitstop._env import cpu_flags, has_compiler, physical_cores

        providers: tuple[str, ...] = ()
        if importlib.util.find_spec("onnxruntime") is not None:
            import onnxruntime

            providers = tuple(onnxruntime.get_available_providers())
        layers = (nn.Linear, nn.LSTM, nn.GRU)
        present = {type(m).__name__ for m in module.modules() if type(m) in layers}  # exact types, as quantize_dynamic
        return cls(
            device="cuda" if device.startswith("cuda") else "cpu",
            cpu_flags=frozenset(cpu_flags()), physical_cores=physical_cores(),
            has_4d_input=4 in input_dims,
            quantizable=any(isinstance(m, layers) for m in module.modules()),
            quant_layers=tuple(t.__name__ for t in layers if t.__name__ in present),
            quant_api="torchao" if importlib.util.find_spec("torchao") is not None else "torch.ao",
            bf16_cuda=device.startswith("cuda") and torch.cuda.is_bf16_supported(),
            ort_providers=providers, onnx_installed=importlib.util.find_spec("onnx") is not None,
            compiler=has_compiler(),
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
    """A handler: the gate and the code for one axis of the config. ``choices`` are the axis's
    values, its default first (the grad and thread axes have their own rules)."""

    axis = ""
    choices: tuple[Any, ...] = ()

    def gate(self, config: Axes, target: Target) -> str | None:
        """Why this config's value cannot run here, or None."""
        return None

    def code(self, config: Axes, target: Target) -> Code:
        """The recipe lines that apply this config's value."""
        return Code()
