"""pitstop: make PyTorch models fast and training loops correct, with measured proof.

``import pitstop`` is cheap: torch and everything else load on first use of a name below."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "BenchResult",
    "Doctor",
    "DoctorReport",
    "Inputs",
    "OptimizeReport",
    "OptimizedModel",
    "PitstopError",
    "__version__",
    "bench",
    "data",
    "doctor",
    "integrations",
    "memory",
    "numerics",
    "optimize",
    "parse_input_spec",
    "parse_model_spec",
    "profile",
    "train",
]

_LAZY: dict[str, tuple[str, str | None]] = {
    "bench": ("pitstop.bench", None),
    "BenchResult": ("pitstop.bench.result", "BenchResult"),
    "doctor": ("pitstop.doctor", None),
    "Doctor": ("pitstop.doctor", "Doctor"),
    "DoctorReport": ("pitstop.doctor", "DoctorReport"),
    "data": ("pitstop.data", None),
    "integrations": ("pitstop.integrations", None),
    "memory": ("pitstop.memory", None),
    "numerics": ("pitstop.numerics", None),
    "Inputs": ("pitstop.models.inputs", "Inputs"),
    "optimize": ("pitstop.optimize", None),
    "OptimizedModel": ("pitstop.optimize.result", "OptimizedModel"),
    "OptimizeReport": ("pitstop.optimize.result", "OptimizeReport"),
    "parse_input_spec": ("pitstop.models.inputs", "parse_input_spec"),
    "parse_model_spec": ("pitstop.models.spec", "parse_model_spec"),
    "PitstopError": ("pitstop.errors", "PitstopError"),
    "train": ("pitstop.train", None),
    "profile": ("pitstop.profile", None),
}

if TYPE_CHECKING:
    from pitstop import data, integrations, memory, numerics
    from pitstop.bench.api import bench
    from pitstop.bench.result import BenchResult
    from pitstop.doctor import Doctor, DoctorReport, doctor
    from pitstop.errors import PitstopError
    from pitstop.models.inputs import Inputs, parse_input_spec
    from pitstop.models.spec import parse_model_spec
    from pitstop.optimize.api import optimize
    from pitstop.optimize.result import OptimizedModel, OptimizeReport
    from pitstop.profile.api import profile
    from pitstop.train.api import train


def _register_renderer() -> None:
    """Values render through ``pitstop.report`` without importing it: registered here, at the top
    (imported on a value's first ``str()`` or notebook display)."""
    from pitstop._document import use_renderer

    use_renderer("pitstop.report")


_register_renderer()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = importlib.import_module(module) if attr is None else getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pitstop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
