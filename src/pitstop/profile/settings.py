"""What a profile run is asked to do: one frozen settings object, validated on construction (errors
name the field: ``SettingError``; the CLI says the flag)."""

from __future__ import annotations

from dataclasses import dataclass

from pitstop.errors import SettingError

MAX_TRACE_STEPS = 10  # a trace of more steps is gigabytes on a real model and slows the run down


@dataclass(frozen=True)
class ProfileSettings:
    """``wait``: steps before the op-level drill-down starts (the first steps warm up); ``warmup``
    and ``active``: torch.profiler's schedule after that (``active`` steps are recorded, at most
    ``MAX_TRACE_STEPS``); ``drill_down=False`` leaves torch.profiler off; ``trace``: a folder for
    the Chrome trace of the active steps (written only when given); ``syncs=False`` leaves Tensor's
    syncing methods unwrapped; ``native_bf16`` / ``physical_cores``: the hardware facts the verdict
    uses (None: detected)."""

    wait: int = 5
    warmup: int = 1
    active: int = 3
    drill_down: bool = True
    trace: str | None = None
    syncs: bool = True
    native_bf16: bool | None = None
    physical_cores: int | None = None

    def __post_init__(self) -> None:
        for name, low in (("wait", 1), ("warmup", 0), ("active", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise SettingError(name, f"expected an integer >= {low}, got {value!r}")
        if self.active > MAX_TRACE_STEPS:
            raise SettingError("active", f"at most {MAX_TRACE_STEPS} steps are recorded (traces grow fast), "
                             f"got {self.active}; profile fewer steps")
        if self.trace is not None and not isinstance(self.trace, str):
            raise SettingError("trace", f"expected a folder path as a string, got {type(self.trace).__name__}")
        if self.physical_cores is not None and (not isinstance(self.physical_cores, int) or self.physical_cores < 1):
            raise SettingError("physical_cores", f"expected a positive integer or None, got {self.physical_cores!r}")

    @property
    def window(self) -> tuple[int, int]:
        """First and last step (1-based) that torch.profiler records or warms up in."""
        return self.wait + 1, self.wait + self.warmup + self.active
