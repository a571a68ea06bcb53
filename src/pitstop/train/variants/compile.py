"""``torch.compile`` of the model (forward and, through AOTAutograd, backward): default,
max-autotune, and reduce-overhead (CUDA graphs, CUDA only; each step marks its beginning)."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget


class Compile(Technique):
    axis = "compile"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.compile == "reduce-overhead" and target.device != "cuda":
            return "reduce-overhead uses CUDA graphs; it needs CUDA"
        if config.compile and target.device == "cpu" and not target.compiler:
            return "torch.compile needs a C++ compiler (g++ or clang++) for CPU kernels; none found"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        if not config.compile:
            return Code()
        mode = "" if config.compile == "default" else f", mode={config.compile!r}"
        code = Code(setup=[f"model = torch.compile(model{mode})  # compiles on the first step"])
        if config.compile == "reduce-overhead":
            code.step_begin.append("torch.compiler.cudagraph_mark_step_begin()  # CUDA graphs: a new step")
            code.details["cudagraphs"] = True
        return code
