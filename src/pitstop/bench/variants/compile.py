"""The compile axis: ``torch.compile`` in its default mode, max-autotune or reduce-overhead (CUDA
graphs); on CPU inference, inductor freezes the weights into the graph of that model only."""

from __future__ import annotations

from pitstop.bench.variants.base import Axes, Code, Target, Technique

CHOICES = (None, "default", "max-autotune", "reduce-overhead")


class Compile(Technique):
    """``torch.compile`` of the model (CPU inference: with inductor freezing)."""

    axis = "compile"
    choices = CHOICES

    def gate(self, config: Axes, target: Target) -> str | None:
        if config.compile not in CHOICES:
            return f"unknown compile mode {config.compile!r}"
        if config.compile == "reduce-overhead" and target.device != "cuda":
            return "reduce-overhead uses CUDA graphs; it needs CUDA"
        if config.compile and target.device == "cpu" and not target.compiler:
            return "torch.compile needs a C++ compiler (g++ or clang++) for CPU kernels; none found"
        return None

    def code(self, config: Axes, target: Target) -> Code:
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
