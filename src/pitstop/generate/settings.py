"""``GenerateSettings``: what a generation search measures (new tokens, prompt length, batch
sizes), what it may try and within what time; validated once, passed down whole."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pitstop._settings import normalise
from pitstop.engine.settings import RunSettings
from pitstop.engine.source import resolve_device
from pitstop.errors import SettingError
from pitstop.generate.techniques import AXES


@dataclass(frozen=True)
class GenerateSettings(RunSettings):
    """A generation search (plus ``RunSettings``: threads, device, seed, replicas, timeout_s, ...)."""

    new_tokens: int = 32  # tokens generated after the prompt (exactly: EOS is held off while measuring)
    prompt_len: int = 128  # prompt tokens, drawn from a seeded generator (or the first of ``prompts``)
    batch_sizes: tuple[int, ...] = (1,)  # sequences per generate call: the search runs at the first
    techniques: tuple[str, ...] = AXES
    time_budget_s: float = 300.0
    replicas: int = 2  # worker processes per finalist
    tolerance: float = 2e-2  # lossy variants: rel err of the logits before the first divergence
    gate_tokens: int | None = None  # lossy variants keep the first N new tokens (default: min(16, new_tokens))
    prompts: str | None = None  # a JSON file of token-id lists (your prompts) instead of random ones
    fidelity_prompts: int = 4  # prompts the token gate compares (batches shaped like the timing batch)
    allow_emulated: bool = False  # measure bf16/fp16 where this hardware only emulates it
    bench_only: bool = False  # measure the techniques' grid (bench --generate) without choosing

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("new_tokens", "prompt_len", "fidelity_prompts"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SettingError(name, f"must be a positive integer, got {value!r}")
        if self.new_tokens < 2:
            raise SettingError("new_tokens", "need at least 2 new tokens (a prefill and a decode step)")
        normalise(self, "batch_sizes", tuple(self.batch_sizes))
        if not self.batch_sizes or any(not isinstance(b, int) or b < 1 for b in self.batch_sizes):
            raise SettingError("batch_sizes", f"need positive integers, got {list(self.batch_sizes)}")
        normalise(self, "techniques", tuple(self.techniques))
        unknown = set(self.techniques) - set(AXES)
        if unknown:
            raise SettingError("techniques", f"unknown {', '.join(sorted(unknown))}; choose from {', '.join(AXES)}")
        if self.time_budget_s < 10:
            raise SettingError("time_budget_s", f"must be at least 10 s, got {self.time_budget_s:g}")
        if not self.tolerance > 0:
            raise SettingError("tolerance", f"must be positive, got {self.tolerance}")
        if self.gate_tokens is not None and self.gate_tokens < 0:
            raise SettingError("gate_tokens", f"must be >= 0, got {self.gate_tokens}")

    @property
    def gate(self) -> int:
        """New tokens a lossy variant must keep on every prompt (a near tie excused)."""
        return min(16, self.new_tokens) if self.gate_tokens is None else min(self.gate_tokens, self.new_tokens)

    @property
    def search_batch(self) -> int:
        """The batch size the search runs at: the first of ``batch_sizes``."""
        return self.batch_sizes[0]

    def resolved(self) -> GenerateSettings:
        """Threads and device fixed for this machine."""
        return dataclasses.replace(self, threads=self.resolved_threads, device=resolve_device(self.device))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"new_tokens": self.new_tokens, "prompt_len": self.prompt_len, "batch_sizes": list(self.batch_sizes),
                "techniques": list(self.techniques), "time_budget_s": self.time_budget_s,
                "threads": self.resolved_threads, "device": self.device, "seed": self.seed,
                "replicas": self.replicas, "timeout_s": self.timeout_s, "tolerance": self.tolerance,
                "gate_tokens": self.gate, "prompts": self.prompts, "fidelity_prompts": self.fidelity_prompts,
                "allow_emulated": self.allow_emulated, "bench_only": self.bench_only,
                "worker_env": dict(self.worker_env)}
