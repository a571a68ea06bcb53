"""What ``pitstop train`` searches and how: one frozen settings value, validated on creation
(errors name the field), recorded in the JSON ``settings``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pitstop.engine.scripts import TRAIN_SCRIPT_OPTIONS
from pitstop.engine.settings import WorkerSettings
from pitstop.engine.timer import TimingPolicy
from pitstop.errors import SettingError
from pitstop.train.techniques import TECHNIQUES

SCRIPT_OPTIONS = TRAIN_SCRIPT_OPTIONS  # pitstop train SCRIPT's own options (engine/scripts: profile reads them too)
AXES = TECHNIQUES  # the name of earlier releases
# what the probe tries on each axis of fixed options (threads, workers, micro_batch, checkpoint are sized to the
# machine and the model); ``--techniques AXIS=OPTION`` narrows an axis to one of these
AXIS_OPTIONS: dict[str, tuple[Any, ...]] = {
    "precision": ("bf16-autocast", "fp16-autocast"),
    "compile": ("default", "max-autotune", "reduce-overhead"), "tf32": (True,), "cudnn_benchmark": (True,),
    "optimizer": ("foreach", "fused"),
    "zero_grad": ("zeros",), "layout": ("channels_last",),
    "ddp": ("grad-view", "static-graph", "bucket-100", "fsdp-no-reshard", "fsdp-bf16-params"),
}


@dataclass(frozen=True)
class TrainSettings(WorkerSettings):
    """Every knob of a train search: ``WorkerSettings`` (threads, device, seed, isolate, replicas,
    timeout_s, worker_env, shared with every measuring run) and train's own. Errors name the field
    (``SettingError``; the CLI says the flag)."""

    threads: int = field(default_factory=lambda: _cores())  # never None here
    replicas: int = 2  # worker processes per finalist
    batch_size: int | None = None  # None: the factory's own batch, else the zoo's largest (settled by inspection)
    time_budget_s: float = 300.0
    steps: int | None = None  # the planned run length: compile must pay for itself within it
    trajectory_steps: int = 20  # the loss after this many steps is judged (at least 20)
    seeds: int = 3  # fp32 reference runs whose spread makes the band
    tolerance: float = 0.05  # the band is widened by this share of the reference's loss decrease
    techniques: tuple[str, ...] = TECHNIQUES  # AXIS or AXIS=OPTION (narrowed to that option: ``only``)
    memory_budget_bytes: int | None = None  # checkpointing and micro-batches are tried to fit it
    batch_dim: int = 0  # the batch dimension of the inputs and the target (1 for sequence-first batches)
    nproc_per_node: int = 1  # a script: each variant a torchrun job of this many ranks
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    allow_emulated: bool = False  # measure (and edit) a precision this hardware only emulates, saying so
    only: tuple[tuple[str, str], ...] = ()  # techniques narrowed to some options: ("precision", "fp16-autocast")
    # from a ``techniques`` entry "precision=fp16-autocast" (the GPU benchmark's fp16 path where bf16 would win)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("threads", "replicas", "seeds", "trajectory_steps", "nproc_per_node"):
            _positive_int(name, getattr(self, name))
        for name in ("batch_size", "steps", "memory_budget_bytes"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        if not isinstance(self.batch_dim, int) or isinstance(self.batch_dim, bool) or not 0 <= self.batch_dim < 8:
            raise SettingError("batch_dim", f"must be a dimension index 0..7, got {self.batch_dim!r}")
        if not isinstance(self.time_budget_s, int | float) or self.time_budget_s < 10:
            raise SettingError("time_budget_s", f"must be at least 10 s, got {self.time_budget_s!r}")
        if self.trajectory_steps < 20:
            raise SettingError("trajectory_steps", f"must be at least 20 (a shorter run proves little), "
                                                   f"got {self.trajectory_steps}")
        if self.seeds < 2:
            raise SettingError("seeds", f"must be at least 2 (the reference's spread needs two runs), got {self.seeds}")
        if not isinstance(self.tolerance, int | float) or not 0 <= self.tolerance <= 1:
            raise SettingError("tolerance", f"must be a share of the loss decrease in [0, 1], got {self.tolerance!r}")
        techniques, only = _narrowed(self.techniques)
        object.__setattr__(self, "techniques", techniques)
        object.__setattr__(self, "only", tuple(self.only) + only)
        if not isinstance(self.device, str) or (self.device != "cpu" and not self.device.startswith("cuda")):
            raise SettingError("device", f"expected cpu, cuda or auto, got {self.device!r}")

    @property
    def batch(self) -> int:
        """The batch size (once settled by the inspection; 1 before)."""
        return self.batch_size or 1

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"batch_size": self.batch_size, "threads": self.threads, "device": self.device, "seed": self.seed,
                "time_budget_s": self.time_budget_s, "steps": self.steps,
                "trajectory_steps": self.trajectory_steps, "seeds": self.seeds, "tolerance": self.tolerance,
                "replicas": self.replicas, "isolate": self.isolate, "timeout_s": self.timeout_s,
                "techniques": [a for a in self.techniques if a not in dict(self.only)]
                + [f"{a}={o}" for a, o in self.only], "memory_budget_bytes": self.memory_budget_bytes,
                "batch_dim": self.batch_dim, "nproc_per_node": self.nproc_per_node, "worker_env": dict(self.worker_env),
                "allow_emulated": self.allow_emulated,
                "timing": self.policy.to_dict()}


def _narrowed(entries: Any) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The axes named by ``entries`` (``AXIS`` or ``AXIS=OPTION``), and the options the second form keeps."""
    axes: list[str] = []
    only: list[tuple[str, str]] = []
    for entry in entries:
        axis, sep, option = str(entry).partition("=")
        if axis not in TECHNIQUES:
            raise SettingError("techniques", f"unknown {axis}; choose from {', '.join(TECHNIQUES)}")
        if sep:
            named = [o for o in AXIS_OPTIONS.get(axis, ()) if isinstance(o, str)]
            if option not in named:
                choices = f"choose from {', '.join(f'{axis}={o}' for o in named)}" if named else \
                    f"{axis} has no options to choose from: name it alone"
                raise SettingError("techniques", f"unknown {entry}; {choices}")
            only.append((axis, option))
        if axis not in axes:
            axes.append(axis)
    return tuple(axes), tuple(only)


def options(settings: TrainSettings, axis: str) -> tuple[Any, ...]:
    """What the probe tries on ``axis``: ``AXIS_OPTIONS``, narrowed where ``settings.only`` names the axis."""
    kept = [o for a, o in settings.only if a == axis]
    return tuple(o for o in AXIS_OPTIONS.get(axis, ()) if not kept or o in kept)


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SettingError(name, f"must be a positive integer, got {value!r}")


def _cores() -> int:
    from pitstop._env import physical_cores

    return physical_cores()
