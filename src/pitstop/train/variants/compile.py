"""``torch.compile`` of the model (forward and, through AOTAutograd, backward): default,
max-autotune, reduce-overhead (CUDA graphs, CUDA only; each step marks its beginning), and
compiled-autograd: the default compile plus compiled autograd, which captures the whole backward
at run time through the autograd engine (``torch._dynamo.compiled_autograd._enable``, the API of
PyTorch's compiled-autograd tutorial): it helps where the forward has graph breaks or the model
has backward hooks, which AOTAutograd's backward graph cannot hold; elsewhere it only adds a second
cold compile, so it is not probed: the search measures it as a finalist beside the best default
compile (``TrainSearch.finalists``)."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget

MODES = {"max-autotune": "max-autotune-no-cudagraphs", "reduce-overhead": "reduce-overhead"}  # torch.compile's


class Compile(Technique):
    axis = "compile"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.compile == "reduce-overhead" and target.device != "cuda":
            return "reduce-overhead uses CUDA graphs; it needs CUDA"
        if config.compile == "max-autotune" and target.device != "cuda":
            return "max-autotune tunes GPU kernels (here max-autotune-no-cudagraphs); on a CPU it tunes for minutes"
        if config.compile and target.device == "cpu" and not target.compiler:
            return "torch.compile needs a C++ compiler (g++ or clang++) for CPU kernels; none found"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        if not config.compile:
            return Code()
        mode = "" if config.compile in ("default", "compiled-autograd") else f", mode={MODES[config.compile]!r}"
        code = Code(setup=[f"model = torch.compile(model{mode})  # compiles on the first step"])
        if config.compile == "compiled-autograd":
            code.imports.append("import torch._dynamo.compiled_autograd")
            code.backward_contexts.append("torch._dynamo.compiled_autograd._enable(torch.compile)")
            code.details["compiled_autograd"] = True
        if config.compile == "reduce-overhead":
            code.step_begin.append("torch.compiler.cudagraph_mark_step_begin()  # CUDA graphs: a new step")
            code.details["cudagraphs"] = True
        return code
