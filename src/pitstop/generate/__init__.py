"""Generation as a workload: prefill, per-token decode and tokens/s of a causal LM, every
technique measured and gated on the reference's greedy tokens, the fastest as a recipe."""

from pitstop.generate.api import optimize_generation
from pitstop.generate.settings import GenerateSettings

__all__ = ["GenerateSettings", "optimize_generation"]
