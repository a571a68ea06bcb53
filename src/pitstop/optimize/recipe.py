"""The full recipe module (technique code + how to rebuild the model + example inputs) and the
files ``--save`` writes: recipe.py, recipe.json and, for ONNX Runtime, model.onnx."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import torch

from pitstop.bench.variants.config import VariantConfig
from pitstop.bench.variants.handlers import Target, recipe_source
from pitstop.engine.recipe import build, checked, factory_code
from pitstop.engine.source import ModuleSource, SpecSource
from pitstop.models.inputs import DEFAULT_INT_RANGE, DTYPES, InputSpec


class Reported(Protocol):
    """What the recipe files take of a ``OptimizeReport`` (which writes them: a protocol, not an import)."""

    model: str
    environment: dict[str, Any]
    recipe: str

    def to_dict(self) -> dict[str, Any]: ...

def full_recipe(config: VariantConfig, target: Target, threads: int, source: SpecSource | ModuleSource,
                batch_size: int, header: str, measured_on: dict[str, str] | None = None) -> str:
    """The recipe module: ``apply`` (what was measured), plus ``build`` and ``example_inputs`` and
    a runnable ``__main__`` where the model came from a spec; ``measured_on``, the model file's
    fingerprint when the run started, makes ``factory()`` warn loudly when that file changed."""
    text = checked(recipe_source(config, target, threads, header))
    if not isinstance(source, SpecSource):
        return text
    built = factory_code(source, measured_on)
    spec = source.input_spec or source.spec.default_input_spec()
    if built is None:
        return text
    example = _example_code(spec, batch_size) if spec is not None else _factory_example_code(batch_size)
    return checked(f"{text}\n\n# -- the model pitstop measured (seed {source.seed}) and example inputs --\n\n"
            f"{built}\n\n{example}\n\n"
            f'if __name__ == "__main__":\n'
            f"    torch.manual_seed({source.seed})  # the same random weights pitstop measured\n"
            f"    model = build()\n"
            f"    example = example_inputs()\n"
            f"    fast = apply(model, example)\n"
            f"    out = fast(*example)\n"
            f"    print(type(out).__name__, getattr(out, 'shape', ''))\n")


def _factory_example_code(batch_size: int) -> str:
    return (f"BATCH_SIZE = {batch_size}\n\n\ndef example_inputs():\n"
            '    """The factory\'s own example inputs (as a tuple of positional arguments)."""\n'
            "    value = factory()\n"
            "    inputs = value[1] if isinstance(value, (tuple, list)) else ()\n"
            "    return inputs if isinstance(inputs, (tuple, list)) else (inputs,)\n")


def _example_code(spec: InputSpec, batch_size: int) -> str:
    tensors = []
    for t in spec.tensors:
        dtype, shape = DTYPES[t.dtype], t.shape(batch_size)
        if dtype.is_floating_point:
            tensors.append(f"torch.randn({shape}, dtype={dtype})")
        elif dtype == torch.bool:
            tensors.append(f"torch.randint(0, 2, {shape}).bool()")
        else:
            low, high = (t.low, t.high) if t.low is not None else DEFAULT_INT_RANGE
            tensors.append(f"torch.randint({low}, {high}, {shape}, dtype={dtype})")
    return (f"BATCH_SIZE = {batch_size}\n\n\ndef example_inputs():\n"
            f'    """Random inputs like the ones measured ({spec})."""\n'
            f"    return ({', '.join(tensors)},)\n")


def recipe_files(report: Reported, directory: Path) -> dict[str, str | bytes | Path]:
    """recipe.py, recipe.json and the ONNX graphs (fp32, int8, external data) found in ``directory``,
    where the recipe ran."""
    doc = report.to_dict()
    meta: dict[str, Any] = {"pitstop": doc["pitstop"], "model": report.model, "winner": doc["winner"],
                            "choice": doc["choice"], "environment": report.environment}
    files: dict[str, str | bytes | Path] = {"recipe.py": checked(report.recipe),
                                            "recipe.json": json.dumps(meta, indent=2, allow_nan=False) + "\n"}
    files.update({p.name: p for p in sorted(directory.glob("model*.onnx*"))})
    return files


def write_recipe_files(report: Reported, directory: Path, ran_in: Path | None = None) -> list[str]:
    """The recipe's files written as the folder ``directory``, whole (``pitstop._io.write_folder``);
    ``ran_in``: where the recipe ran (its ONNX graphs are there). Returns the paths written."""
    from pitstop._io import write_folder

    return write_folder(directory, recipe_files(report, ran_in or directory))


def run_recipe(source_text: str, path: Path, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Execute a recipe as the file ``path`` and apply it to ``module`` (ONNX graphs land beside it)."""
    namespace = build(source_text, path, name="pitstop_recipe_applied")
    return namespace["apply"](module, args, kwargs)
