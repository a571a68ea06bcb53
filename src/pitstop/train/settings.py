"""What ``pitstop train`` searches and how: one frozen settings value, validated on creation
(errors name the field), recorded in the JSON ``settings``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pitstop.bench.timer import TimingPolicy
from pitstop.errors import UsageError

AXES = ("precision", "compile", "optimizer", "zero_grad", "layout", "threads", "micro_batch", "checkpoint")


@dataclass(frozen=True)
class TrainSettings:
    """Every knob of a train search."""

    batch_size: int
    threads: int
    device: str = "cpu"
    seed: int = 0
    time_budget_s: float = 300.0
    steps: int | None = None  # the planned run length: compile must pay for itself within it
    trajectory_steps: int = 20  # the loss after this many steps is judged (at least 20)
    seeds: int = 3  # fp32 reference runs whose spread makes the band
    tolerance: float = 0.05  # the band is widened by this share of the reference's loss decrease
    replicas: int = 2  # worker processes per finalist
    isolate: bool = True
    timeout_s: float = 300.0  # one worker request (compile, a trajectory) longer than this fails the variant
    axes: tuple[str, ...] = AXES
    memory_budget_bytes: int | None = None  # checkpointing and micro-batches are tried to fit it
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    worker_env: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        positive = {"batch_size": self.batch_size, "threads": self.threads, "replicas": self.replicas}
        for name, value in positive.items():
            if not isinstance(value, int) or value < 1:
                raise UsageError(f"--{name.replace('_', '-')}: need a positive integer, got {value!r}")
        if self.time_budget_s < 10:
            raise UsageError(f"--time-budget-s must be at least 10 s, got {self.time_budget_s:g}")
        if self.trajectory_steps < 20:
            raise UsageError(f"--trajectory-steps must be at least 20 (a shorter run proves little), "
                             f"got {self.trajectory_steps}")
        if self.seeds < 2:
            raise UsageError(f"seeds must be at least 2 (the reference's spread needs two runs), got {self.seeds}")
        if not 0 <= self.tolerance <= 1:
            raise UsageError(f"--tolerance must be a share of the loss decrease in [0, 1], got {self.tolerance:g}")
        if self.steps is not None and self.steps < 1:
            raise UsageError(f"--steps must be a positive number of planned steps, got {self.steps}")
        if self.timeout_s <= 0:
            raise UsageError(f"--timeout-s must be positive, got {self.timeout_s:g}")
        unknown = set(self.axes) - set(AXES)
        if unknown:
            raise UsageError(f"--techniques: unknown {', '.join(sorted(unknown))}; choose from {', '.join(AXES)}")
        if self.memory_budget_bytes is not None and self.memory_budget_bytes <= 0:
            raise UsageError(f"--memory-budget-mb must be positive, got {self.memory_budget_bytes}")
        if self.device != "cpu" and not self.device.startswith("cuda"):
            raise UsageError(f"--device: expected cpu, cuda or auto, got {self.device!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"batch_size": self.batch_size, "threads": self.threads, "device": self.device, "seed": self.seed,
                "time_budget_s": self.time_budget_s, "steps": self.steps,
                "trajectory_steps": self.trajectory_steps, "seeds": self.seeds, "tolerance": self.tolerance,
                "replicas": self.replicas, "isolate": self.isolate, "timeout_s": self.timeout_s,
                "techniques": list(self.axes), "memory_budget_bytes": self.memory_budget_bytes,
                "worker_env": dict(self.worker_env), "timing": self.policy.to_dict()}
