"""``pitstop.bench``: the Python entry point of the bench scenario."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torch import nn

from pitstop._env import physical_cores
from pitstop.bench.result import BenchResult
from pitstop.bench.runner import BenchRunner, BenchSettings
from pitstop.bench.source import ModuleSource, SpecSource
from pitstop.bench.timer import TimingPolicy
from pitstop.bench.variants.config import GRAD_MODES, VariantConfig, parse_variant
from pitstop.errors import UsageError
from pitstop.models.inputs import Inputs, parse_input_spec
from pitstop.models.spec import parse_model_spec


def bench(
    model: nn.Module | str,
    example_inputs: Any = None,
    *,
    batch_sizes: Sequence[int] | None = None,
    variants: Sequence[str | VariantConfig] | None = None,
    threads: int | None = None,
    budget_s: float = 5.0,
    target: float = 0.02,
    timeout_s: float = 300.0,
    device: str = "cpu",
    seed: int = 0,
    isolate: bool = True,
    replicas: int = 3,
    json_path: str | None = None,
    worker_env: dict[str, str] | None = None,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> BenchResult:
    """Measure the grad-mode variants of ``model`` at each batch size.

    ``model`` is an ``nn.Module`` (with ``example_inputs``: a tensor, a tuple, a dict or
    ``Inputs``) or a spec string (``"zoo:mlp"``, ``"file.py:build"``; ``example_inputs`` may then
    be an input spec such as ``"float32[B,1024]"``). Each variant runs in ``replicas`` worker
    processes of its own (``isolate=False`` runs inline, in one); ``worker_env`` adds environment
    variables to every worker (e.g. allocator tunables, to measure their effect). Returns a
    ``BenchResult`` with ``.table()``, ``.to_json()``."""
    source = _source(model, example_inputs, seed)
    settings = BenchSettings(
        batch_sizes=tuple(batch_sizes or source.default_batch_sizes()),
        threads=threads or physical_cores(),
        variants=tuple(parse_variant(v) if isinstance(v, str) else v for v in (variants or GRAD_MODES)),
        policy=TimingPolicy(target=target, budget_s=budget_s),
        timeout_s=timeout_s, device=_device(device), seed=seed, isolate=isolate, replicas=replicas,
        worker_env=tuple(sorted((worker_env or {}).items())),
    )
    sink = None
    if json_path:
        from pitstop._io import check_writable, write_atomic

        check_writable(json_path)  # before minutes of measuring, not after

        def sink(result: BenchResult) -> None:
            write_atomic(json_path, result.to_dict())

    return BenchRunner(source, settings, on_event=on_event, sink=sink).run()


def _source(model: nn.Module | str, example_inputs: Any, seed: int) -> SpecSource | ModuleSource:
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


def _device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {device}: CUDA is not available here; use --device cpu")
    if device != "cpu" and not device.startswith("cuda"):
        raise UsageError(f"--device: expected cpu, cuda or auto, got {device!r}")
    return device
