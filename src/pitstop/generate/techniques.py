"""Generation techniques: one ``GenConfig`` per variant, what it needs here (``gate``), how it is
applied to a causal LM (``apply``) and the same as recipe source (``recipe_source``).

Every variant starts from the reference: the model in eval mode under ``torch.inference_mode``,
greedy, transformers' default (dynamic) KV cache, SDPA attention, fp32 weights. A technique is
lossless when it should give the reference's greedy tokens exactly (the cache, compile, the
attention kernel, threads, prompt lookup); bf16/fp16 weights and weight quantization are lossy
and judged margin-aware (``tokens.py``)."""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

from pitstop._env import native_bf16

AXES = ("cache", "compile", "precision", "attention", "quant", "threads", "lookup")
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead")
QUANTS = ("int8-weight-only", "int4-weight-only", "int8-dynamic")
LOOKUP_TOKENS = 10  # prompt_lookup_num_tokens: the n-gram continuation proposed per step


@dataclass(frozen=True)
class GenConfig:
    """One way to generate: cache, compile mode, weight dtype, attention kernel, weight
    quantization, intra-op threads (None: the run's) and prompt-lookup decoding."""

    cache: str = "dynamic"  # "dynamic" | "static"
    compile: str | None = None  # one of COMPILE_MODES (needs the static cache: fixed shapes)
    dtype: str = "fp32"  # "fp32" | "bf16" | "fp16"
    attention: str = "sdpa"  # "sdpa" | "eager"
    quant: str | None = None  # one of QUANTS
    threads: int | None = None
    lookup: bool = False

    @property
    def name(self) -> str:
        """``inference_mode`` for the reference, else its parts joined with ``+``."""
        return "+".join(self.parts) or "inference_mode"

    @property
    def parts(self) -> list[str]:
        """The techniques in this config, in the order they are applied."""
        parts = []
        if self.dtype != "fp32":
            parts.append(self.dtype)
        if self.quant:
            parts.append(self.quant)
        if self.attention != "sdpa":
            parts.append(f"{self.attention}-attention")
        if self.cache == "static":
            parts.append("static-cache")
        if self.compile:
            parts.append("compile" if self.compile == "default" else f"compile-{self.compile}")
        if self.lookup:
            parts.append("prompt-lookup")
        if self.threads:
            parts.append(f"threads{self.threads}")
        return parts

    @property
    def lossless(self) -> bool:
        """Should give the reference's greedy tokens exactly (fp32 weights, not quantized)."""
        return self.dtype == "fp32" and self.quant is None

    @property
    def size(self) -> int:
        """How many techniques it stacks (a simpler candidate is preferred within noise); a compile
        mode other than the default counts one more: max-autotune chooses its kernels by timing them
        while it compiles, so two processes can run different ones (on the 2-core dev machine the same
        variant measured 1.17x in one pair of processes, faster than default compile in another), and
        reduce-overhead adds CUDA graphs."""
        return len(self.parts) + (1 if self.compile not in (None, "default") else 0)

    def combined(self, other: GenConfig) -> GenConfig:
        """This config with ``other``'s non-default parts on top."""
        base, changes = GenConfig(), {}
        for key, value in asdict(other).items():
            if value != getattr(base, key):
                changes[key] = value
        return replace(self, **changes)

    def to_dict(self, threads: int | None = None) -> dict[str, Any]:
        """Plain dict (JSON and worker messages); ``threads`` fills in the run's count."""
        doc = asdict(self)
        if threads is not None and self.threads is None:
            doc["threads"] = threads
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any], run_threads: int | None = None) -> GenConfig:
        """Back from ``to_dict`` (the run's own thread count is stored as None again)."""
        fields = {k: doc[k] for k in asdict(cls()) if k in doc}
        if run_threads is not None and fields.get("threads") == run_threads:
            fields["threads"] = None
        return cls(**fields)


REFERENCE = GenConfig()


def singles(axes: tuple[str, ...], device: str, cores: int) -> list[GenConfig]:
    """Each technique of ``axes`` alone on top of the reference (compile with its static cache)."""
    found: list[GenConfig] = []
    if "cache" in axes:
        found.append(GenConfig(cache="static"))
    if "compile" in axes:
        found.append(GenConfig(cache="static", compile="default"))
        found.append(GenConfig(cache="static", compile="reduce-overhead" if device == "cuda"
                               else "max-autotune-no-cudagraphs"))
    if "precision" in axes:
        found += [GenConfig(dtype="bf16"), GenConfig(dtype="fp16")]
    if "attention" in axes:
        found.append(GenConfig(attention="eager"))
    if "quant" in axes:
        found += [GenConfig(quant=q) for q in QUANTS]
    if "lookup" in axes:
        found.append(GenConfig(lookup=True))
    if "threads" in axes:
        found += [GenConfig(threads=n) for n in sorted({1, max(1, cores // 2)}) if n < cores]
    return found


def gate(config: GenConfig, device: str, batch_size: int, allow_emulated: bool = False, hf: bool = True
         ) -> str | None:
    """Why ``config`` cannot run here (a ``skipped`` row), or None; ``hf=False``: the model generates
    with its own ``generate()``, which takes none of transformers' options (cache, attention, lookup)."""
    if not hf and (config.cache != "dynamic" or config.attention != "sdpa" or config.lookup):
        return "a transformers generate() option: this model generates with its own generate()"
    if config.compile == "reduce-overhead" and device != "cuda":
        return "reduce-overhead captures CUDA graphs: CUDA only"
    if config.compile and config.cache != "static":
        return "compile needs the static KV cache (fixed shapes; the dynamic cache recompiles every token)"
    if config.dtype == "fp16" and device != "cuda" and not allow_emulated:
        return "fp16 matmuls are emulated on this CPU (no native fp16 arithmetic); --allow-emulated measures it anyway"
    if config.dtype == "bf16" and not native_bf16(device) and not allow_emulated:
        return "bf16 is not native here (no avx512_bf16/AMX or CUDA bf16); --allow-emulated measures it anyway"
    if config.quant in ("int8-weight-only", "int4-weight-only") and importlib.util.find_spec("torchao") is None:
        return f"{config.quant} needs torchao (pip install torchao)"
    if config.quant == "int4-weight-only" and device != "cuda" and importlib.util.find_spec("mslk") is None:
        return "int4 weight-only on CPU needs torchao's int4 CPU kernels (the mslk package), not installed here"
    if config.quant == "int8-dynamic" and device != "cpu":
        return "torch.ao dynamic int8 Linear runs on CPU only"
    if config.quant and config.dtype != "fp32":
        return "weight quantization starts from fp32 weights (not combined with bf16/fp16 weights)"
    if config.lookup and config.cache == "static":
        return "prompt lookup's candidate tokens overflow a static cache sized for the new tokens (transformers)"
    if config.lookup and batch_size != 1:
        return "prompt-lookup decoding generates one sequence at a time (batch 1 only)"
    return None


_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}


def recipe_source(config: GenConfig) -> str:
    """``apply(model)`` and ``GENERATE_KWARGS`` for this config, torch/transformers/torchao only."""
    lines = ["def apply(model):", '    """The model set up the measured way (eval, weights, kernels)."""',
             "    model = model.eval()"]
    if config.threads:
        lines.append(f"    torch.set_num_threads({config.threads})")
    if config.dtype != "fp32":
        lines.append(f"    model = model.to({_DTYPES[config.dtype]})")
    if config.attention != "sdpa":
        lines.append(f'    model.set_attn_implementation("{config.attention}")')
    if config.quant == "int8-dynamic":
        lines.append("    model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)")
    elif config.quant:
        cls = "Int8WeightOnlyConfig" if config.quant == "int8-weight-only" else "Int4WeightOnlyConfig"
        lines += [f"    from torchao.quantization import {cls}, quantize_", "",
                  f"    quantize_(model, {cls}())"]
    if config.compile:
        lines.append(f'    model.forward = torch.compile(model.forward, mode="{config.compile}")')
    lines.append("    return model")
    kwargs: dict[str, Any] = {"do_sample": False}
    if config.cache == "static":
        kwargs["cache_implementation"] = "static"
        if not config.compile:
            kwargs["disable_compile"] = True  # transformers may compile a static cache itself: measured without
    if config.lookup:
        kwargs["prompt_lookup_num_tokens"] = LOOKUP_TOKENS
    return "\n".join(lines) + f"\n\n\nGENERATE_KWARGS = {kwargs!r}\n"


def apply(config: GenConfig, model: torch.nn.Module) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The model set up as ``config`` says, and the keywords ``generate`` takes for it: the
    recipe's own source is executed, so what is measured is what the recipe does."""
    scope: dict[str, Any] = {"torch": torch}
    exec(compile(recipe_source(config), "<pitstop generate recipe>", "exec"), scope)  # our own text, parsed first
    return scope["apply"](model), dict(scope["GENERATE_KWARGS"])
