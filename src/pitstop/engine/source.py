"""Where the model comes from, and how a worker gets the very same model.

A spec (``zoo:mlp``, ``file.py:build``) is rebuilt in the worker with the same seed and then
given the parent's exact weights; a module object is pickled to a file when its classes are
importable by a fresh process, otherwise it runs inline (the reason is recorded)."""

from __future__ import annotations

import copy
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop.engine.settings import check_device
from pitstop.errors import ModelRunError, SettingError, UsageError, last_line
from pitstop.models.inputs import Inputs, InputSpec, parse_input_spec
from pitstop.models.spec import ModelSpec, parse_model_spec


@dataclass
class SpecSource:
    """A model built from a spec; inputs from ``--input``, the factory or the zoo."""

    spec: ModelSpec
    input_spec: InputSpec | None
    seed: int = 0
    _built: tuple[nn.Module, Inputs | None] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The spec text."""
        return self.spec.text

    def default_batch_sizes(self) -> tuple[int, ...]:
        """A spec without ``B``: its own batch; the zoo's defaults; else the factory's example inputs'
        own batch size; else 1 and 8."""
        if self.input_spec is not None and self.input_spec.fixed_batch is not None:
            return (self.input_spec.fixed_batch,)  # no B: the batch never changes
        zoo = self.spec.default_batch_sizes()
        if zoo:
            return zoo
        if self.input_spec is None and not self.spec.takes_batch_size():
            _, inputs = self._build_once()
            if inputs is not None and inputs.batch_size():
                return (inputs.batch_size(),)  # type: ignore[return-value]
        return (1, 8)

    def _build_once(self) -> tuple[nn.Module, Inputs | None]:
        """A factory that ignores the batch size is called once; its inputs are resized per size."""
        if self._built is None:
            self._built = self.spec.build(None, seed=self.seed)
        return self._built

    def materialize(self, batch_size: int) -> tuple[nn.Module, Inputs]:
        """The module and inputs for one batch size."""
        if self.input_spec is not None:
            self.input_spec.check_batch(batch_size)
        if self.spec.takes_batch_size():
            module, inputs = self.spec.build(batch_size, seed=self.seed)
        else:
            module, raw = self._build_once()  # the parent only reads it; workers rebuild their own
            inputs = raw.with_batch_size(batch_size) if raw is not None else None
        spec = self.input_spec or self.spec.default_input_spec()
        if spec is not None:
            inputs = spec.make(batch_size, seed=self.seed)
        if inputs is None:
            raise SettingError("input", f"model {self.name} returns no example inputs; give an input spec such as "
                                        "'float32[B,3,224,224]'")
        return module, inputs

    def worker_source(self, module: nn.Module, workdir: Path) -> tuple[dict[str, Any], str | None]:
        """Rebuild from the spec in the worker (the weights are sent alongside)."""
        return {"kind": "spec", "spec": self.spec.text, "seed": self.seed}, None


@dataclass
class ModuleSource:
    """A module object handed to the Python API, with its example inputs."""

    module: nn.Module
    inputs: Inputs
    name: str

    def default_batch_sizes(self) -> tuple[int, ...]:
        """The example inputs' own batch size."""
        return (self.inputs.batch_size() or 1,)

    def materialize(self, batch_size: int) -> tuple[nn.Module, Inputs]:
        """A private copy of the module (the user's stays untouched) and resized inputs."""
        return copy.deepcopy(self.module), self.inputs.with_batch_size(batch_size)

    def worker_source(self, module: nn.Module, workdir: Path) -> tuple[dict[str, Any] | None, str | None]:
        """A pickle file, or None with the reason it must run inline."""
        local = sorted({type(m).__qualname__ for m in module.modules()
                        if type(m).__module__ in ("__main__", "__mp_main__")})
        if local:
            return None, (f"classes defined in __main__ ({', '.join(local[:3])}) cannot be loaded by a "
                          "worker process; ran inline (use a 'file.py:factory' spec for isolation)")
        buffer = io.BytesIO()
        try:
            torch.save(module, buffer)
        except Exception as exc:
            return None, f"the module cannot be pickled ({last_line(exc)}); ran inline"
        path = workdir / "module.pt"
        path.write_bytes(buffer.getvalue())
        return {"kind": "pickle", "path": str(path)}, None


Source = SpecSource | ModuleSource


def make_source(model: nn.Module | str, example_inputs: Any, seed: int) -> Source:
    """The source of a bench / optimize / train run: a spec string (``example_inputs`` then an input
    spec string or None) or an ``nn.Module`` with its example inputs."""
    if isinstance(model, str):
        if example_inputs is not None and not isinstance(example_inputs, str):
            raise UsageError("with a model spec string, example_inputs must be an input spec string or None")
        spec = parse_input_spec(example_inputs) if example_inputs else None
        return SpecSource(parse_model_spec(model), spec, seed)
    if not isinstance(model, nn.Module):
        raise UsageError(f"model must be an nn.Module or a spec string, got {type(model).__name__}")
    if example_inputs is None:
        raise UsageError("example_inputs is required with an nn.Module (a tensor, a tuple or a dict)")
    return ModuleSource(model, Inputs.coerce(example_inputs), type(model).__name__)


def resolve_device(device: str) -> str:
    """The device to run on: ``auto`` becomes cuda when present; cuda without CUDA is an error."""
    check_device(device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SettingError("device", f"{device} asked for, but CUDA is not available here; use cpu")
    return device


def first_forward(name: str, module: nn.Module, inputs: Inputs, device: torch.device) -> None:
    """Run the model once (eval, no grad); a failure is a one-line ``ModelRunError``."""
    was_training = module.training
    placed = inputs.map(lambda t: t.to(device))
    try:
        with torch.no_grad():
            module.to(device).eval()(*placed.args, **placed.kwargs)
    except Exception as exc:
        raise ModelRunError(
            f"model {name}: the first forward on {inputs.describe()} failed: {last_line(exc)}"
        ) from exc
    finally:
        module.train(was_training)


def write_payload(path: Path, source: dict[str, Any], module: nn.Module, inputs: Inputs,
                  batch_size: int, send_weights: bool, reference_threads: int | None = None) -> None:
    """Everything a worker needs besides the code: inputs, batch size, the exact weights, and the
    thread count the fidelity reference runs with (the run's, whatever the variant's)."""
    payload = {
        "source": source, "batch_size": batch_size, "reference_threads": reference_threads,
        "args": list(inputs.args), "kwargs": dict(inputs.kwargs),
        "state_dict": {k: v.detach().cpu() for k, v in module.state_dict().items()} if send_weights else None,
    }
    torch.save(payload, path)
