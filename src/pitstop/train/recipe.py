"""The training recipe: a self-contained module assembled from the techniques' code, with
``build_optimizer(model)``, ``apply(model) -> (model, optimizer)`` and
``train_step(model, optimizer, batch) -> loss``. Workers execute this very source, so the recipe
is, byte for byte, what was measured; ``--save`` writes it with the model's ``build()`` and an
example batch, runnable without pitstop (``python recipe.py`` trains a few steps)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pitstop.bench.source import ModuleSource, SpecSource
from pitstop.models.inputs import DEFAULT_INT_RANGE, DTYPES, InputSpec
from pitstop.models.zoo import ZOO
from pitstop.train.config import TrainConfig
from pitstop.train.problem import LossSpec, OptimizerSpec
from pitstop.train.variants import TrainTarget, codes

if TYPE_CHECKING:
    from pitstop.train.result import TrainReport

_BODY = '''
def first_tensor(output):
    """The tensor the loss reads: the output itself, its .logits, or its first element."""
    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "logits"):
        return output.logits
    if isinstance(output, dict):
        return next(iter(output.values()))
    return output[0]


def loss_fn(output, target):
    """{loss}"""
    {body}


def build_optimizer(model):
    """The optimizer, with the implementation that was measured ({impl})."""
    return {optimizer}
{helpers}

def prepare_input(t):
    """One input, converted the way the measured variant was fed."""
    if not isinstance(t, torch.Tensor):
        return t
{inputs}
    return t


def apply(model):
    """`model` and its optimizer, set up the measured way: {name}."""
{setup}
    return model, build_optimizer(model)


def forward_backward(model, batch):
    """Forward, loss and backward over `batch` in ACCUMULATION micro-batches (each loss divided by
    their number: the effective batch stays the same); returns the loss, detached."""
    inputs, target = batch
    inputs = [prepare_input(t) for t in inputs]
    target = target.to(DEVICE) if isinstance(target, torch.Tensor) else target
    total = 0.0
    for i in range(ACCUMULATION):
        part = [t.tensor_split(ACCUMULATION)[i] if isinstance(t, torch.Tensor) else t for t in inputs]
        part_target = target.tensor_split(ACCUMULATION)[i] if isinstance(target, torch.Tensor) else target
        with {contexts}:
            loss = loss_fn(model(*part), part_target) / ACCUMULATION
        with {backward_contexts}:
            (SCALER.scale(loss) if SCALER is not None else loss).backward()
        total = total + loss.detach().float()
    return total


def train_step(model, optimizer, batch):
    """One optimizer step on `batch` = (inputs, target); returns the loss (a detached tensor)."""
{step_begin}    optimizer.zero_grad(set_to_none=SET_TO_NONE)
    loss = forward_backward(model, batch)
    if SCALER is not None:  # skips the step when the scaled gradients overflowed, then adapts the scale
        SCALER.step(optimizer)
        SCALER.update()
    else:
        optimizer.step()
    return loss
'''


def recipe_source(config: TrainConfig, target: TrainTarget, threads: int, optimizer: OptimizerSpec,
                  loss: LossSpec, header: str = "") -> str:
    """A self-contained Python module that trains a model the ``config`` way without pitstop."""
    parts = codes(config, target)
    imports = ["import contextlib", "", "import torch", *dict.fromkeys(i for c in parts for i in c.imports),
               *loss.imports]
    setup = ["torch.set_num_threads(THREADS)", "model.train()",
             "model = model.to(DEVICE)" if target.device != "cpu" else "", *(s for c in parts for s in c.setup)]
    inputs = ["t = t.to(DEVICE)" if target.device != "cpu" else "", *(s for c in parts for s in c.inputs)]
    impl = next((c.optimizer for c in parts if c.optimizer), "for-loop")
    scaler = next((c.scaler for c in parts if c.scaler), None)
    set_to_none = next((c.set_to_none for c in parts if c.set_to_none is not None), True)
    accumulation = next((c.accumulation for c in parts if c.accumulation), 1)
    contexts = ", ".join(x for c in parts for x in c.contexts) or "contextlib.nullcontext()"
    step_begin = "".join(f"    {s}\n" for c in parts for s in c.step_begin)
    backward_contexts = ", ".join(x for c in parts for x in c.backward_contexts) or "contextlib.nullcontext()"
    constants = [f"DEVICE = {target.device!r}", f"THREADS = {config.threads or threads}",
                 f"ACCUMULATION = {accumulation}  # micro-batches per optimizer step",
                 f"SET_TO_NONE = {set_to_none}  # optimizer.zero_grad(set_to_none=...)",
                 f"SCALER = {scaler or 'None'}", *loss.setup]
    body = _BODY.format(loss=loss.description, body=loss.body, optimizer=optimizer.code(impl), impl=impl,
                        helpers="".join(h + "\n" for c in parts for h in c.helpers), inputs=_indent(inputs),
                        setup=_indent(setup), name=config.name, contexts=contexts, step_begin=step_begin,
                        backward_contexts=backward_contexts)
    doc = header or f"pitstop training recipe: {config.name}"
    return (f'"""{doc}\n\nUse: model, optimizer = apply(model); then for each batch = (inputs, target):\n'
            f'loss = train_step(model, optimizer, batch). Needs only torch.\n"""\n\n'
            + "\n".join(imports) + "\n\n" + "\n".join(constants) + "\n\n" + body)


def details(config: TrainConfig, target: TrainTarget) -> dict[str, Any]:
    """What the config's handlers record about how they ran."""
    found: dict[str, Any] = {}
    for code in codes(config, target):
        found.update(code.details)
    return found


def full_recipe(recipe: str, source: SpecSource | ModuleSource, batch_size: int, has_target: bool,
                target_spec: InputSpec | None) -> str:
    """``recipe`` plus ``build()``, ``example_batch()`` and a ``__main__`` that trains 30 steps,
    where the model came from a spec (a module object cannot be rebuilt from source)."""
    if not isinstance(source, SpecSource):
        return recipe
    build = _build_code(source)
    spec = source.input_spec or source.spec.default_input_spec()
    if build is None or spec is None:
        return recipe
    target = "None"
    if has_target and target_spec is not None:
        target = _tensor_code(target_spec, batch_size)[0]
    elif has_target:
        return recipe
    tensors = ", ".join(_tensor_code(spec, batch_size))
    return (f"{recipe}\n\n# -- the model pitstop measured (seed {source.seed}) and an example batch --\n\n"
            f"{build}\n\nBATCH_SIZE = {batch_size}\n\n\ndef example_batch():\n"
            f'    """Random (inputs, target) like the ones measured ({spec}; target {target_spec})."""\n'
            f"    return ({tensors},), {target}\n\n\n"
            f'if __name__ == "__main__":\n'
            f"    torch.manual_seed({source.seed})\n"
            f"    model, optimizer = apply(build())\n"
            f"    batch = example_batch()\n"
            f"    losses = [float(train_step(model, optimizer, batch)) for _ in range(30)]\n"
            f'    print(f"loss {{losses[0]:.4f}} -> {{losses[-1]:.4f}} after {{len(losses)}} steps")\n')


def _build_code(source: SpecSource) -> str | None:
    spec = source.spec
    if spec.kind == "zoo":
        recipe_build = ZOO[spec.target].recipe_build
        return recipe_build() if recipe_build else None
    if spec.takes_batch_size():
        return None
    if spec.kind == "file":
        load = (f"    import importlib.util\n\n"
                f"    path = {str(Path(spec.target).resolve())!r}\n"
                f"    module_spec = importlib.util.spec_from_file_location('user_model', path)\n"
                f"    module = importlib.util.module_from_spec(module_spec)\n"
                f"    module_spec.loader.exec_module(module)\n"
                f"    value = module.{spec.factory}()\n")
    else:
        load = f"    from {spec.target} import {spec.factory}\n\n    value = {spec.factory}()\n"
    return f"def build():\n    \"\"\"The user's model (its factory's module).\"\"\"\n{load}" \
           "    return value[0] if isinstance(value, (tuple, list)) else value\n"


def _tensor_code(spec: InputSpec, batch_size: int) -> list[str]:
    out = []
    for t in spec.tensors:
        dtype, shape = DTYPES[t.dtype], t.shape(batch_size)
        if dtype.is_floating_point:
            out.append(f"torch.randn({shape}, dtype={dtype})")
        elif t.dtype == "bool":
            out.append(f"torch.randint(0, 2, {shape}).bool()")
        else:
            low, high = (t.low, t.high) if t.low is not None else DEFAULT_INT_RANGE
            out.append(f"torch.randint({low}, {high}, {shape}, dtype={dtype})")
    return out


def write_recipe_files(report: TrainReport, directory: Path) -> list[str]:
    """recipe.py and recipe.json (the winner, its evidence, the environment); the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    recipe = directory / "recipe.py"
    recipe.write_text(report.recipe, encoding="utf-8")
    doc = report.to_dict()
    meta = {"pitstop": doc["pitstop"], "model": report.model, "winner": doc["winner"],
            "environment": report.environment}
    (directory / "recipe.json").write_text(json.dumps(meta, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return [str(recipe), str(directory / "recipe.json")]


def _indent(lines: list[str]) -> str:
    return textwrap.indent("\n".join(s for s in lines if s), "    ")
