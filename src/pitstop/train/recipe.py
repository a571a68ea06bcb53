"""The training recipe: a self-contained module assembled from the techniques' code, with
``build_optimizer(model)``, ``apply(model) -> (model, optimizer)`` and
``train_step(model, optimizer, batch) -> loss``. Workers execute this very source, so the recipe
is, byte for byte, what was measured; ``--save`` writes it with the model's ``build()`` and
``example_batch()``, runnable without pitstop (``python recipe.py`` trains a few steps).

Every value that comes from the user (paths, names, descriptions) reaches the source through
``repr`` or a safe docstring literal, and the source is parsed before it is used or written.
A recipe built from a model file carries the file's SHA-256; ``build()`` warns loudly when the
file changed since it was measured."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Protocol

from pitstop.engine.recipe import checked, factory_code
from pitstop.engine.recipe import docstring_literal as _docstring
from pitstop.engine.source import ModuleSource, SpecSource
from pitstop.models.inputs import DEFAULT_INT_RANGE, DTYPES, InputSpec, parse_input_spec
from pitstop.train.config import TrainConfig
from pitstop.train.problem import LossSpec, OptimizerSpec
from pitstop.train.variants import TrainTarget, codes


class Reported(Protocol):
    """What the recipe files take of a ``TrainReport`` (which writes them: a protocol, not an import)."""

    model: str
    environment: dict[str, Any]
    problem: dict[str, Any]
    recipe: str

    def to_dict(self) -> dict[str, Any]: ...


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
    {loss_doc}
    {body}
{groups}

def build_optimizer(model):
    """The optimizer, with the implementation that was measured ({impl})."""
    return {optimizer}
{helpers}

def split_inputs(inputs):
    """(args, kwargs) of a batch's inputs: a dict is keyword arguments; a tuple or list positional
    ones, with keyword arguments after them when its last element is a dict; else one argument."""
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        if inputs and isinstance(inputs[-1], dict):
            return tuple(inputs[:-1]), dict(inputs[-1])
        return tuple(inputs), {{}}
    return (inputs,), {{}}


def prepare_input(t):
    """One input, converted the way the measured variant was fed."""
    if not isinstance(t, torch.Tensor):
        return t
{inputs}
    return t


def micro(value, i):
    """Micro-batch `i` of `value` along BATCH_DIM (tensors with that dimension; others as they are)."""
    if ACCUMULATION == 1 or not isinstance(value, torch.Tensor) or value.dim() <= BATCH_DIM:
        return value
    return value.tensor_split(ACCUMULATION, dim=BATCH_DIM)[i]


def apply(model):
    """`model` and its optimizer, set up the measured way: {name}."""
{setup}
    return model, build_optimizer(model)


def forward_backward(model, batch):
    """Forward, loss and backward over `batch` in ACCUMULATION micro-batches (each loss divided by
    their number: the effective batch stays the same); returns the loss, detached."""
    inputs, target = batch
    args, kwargs = split_inputs(inputs)
    args = [prepare_input(t) for t in args]
    kwargs = {{k: prepare_input(v) for k, v in kwargs.items()}}
    target = target.to(DEVICE) if isinstance(target, torch.Tensor) else target
    total = 0.0
    for i in range(ACCUMULATION):
        part_args = [micro(t, i) for t in args]
        part_kwargs = {{k: micro(v, i) for k, v in kwargs.items()}}
        with {contexts}:
            loss = loss_fn(model(*part_args, **part_kwargs), micro(target, i)) / ACCUMULATION
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
                  loss: LossSpec, header: str = "", batch_dim: int = 0) -> str:
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
                 f"BATCH_DIM = {int(batch_dim)}  # the batch dimension of the inputs and the target",
                 f"SET_TO_NONE = {set_to_none}  # optimizer.zero_grad(set_to_none=...)",
                 f"SCALER = {scaler or 'None'}", *loss.setup]
    body = _BODY.format(loss_doc=_docstring(loss.description), body=loss.body, optimizer=optimizer.code(impl),
                        impl=impl, groups=optimizer.groups_code(),
                        helpers="".join(h + "\n" for c in parts for h in c.helpers), inputs=_indent(inputs),
                        setup=_indent(setup), name=config.name, contexts=contexts, step_begin=step_begin,
                        backward_contexts=backward_contexts)
    doc = _docstring(f"{header or f'pitstop training recipe: {config.name}'}\n\nUse: model, optimizer = "
                     "apply(model); then for each batch = (inputs, target):\nloss = train_step(model, optimizer, "
                     "batch). Needs only torch.\n")
    return checked(f"{doc}\n\n" + "\n".join(imports) + "\n\n" + "\n".join(constants) + "\n\n" + body)


def details(config: TrainConfig, target: TrainTarget) -> dict[str, Any]:
    """What the config's handlers record about how they ran."""
    found: dict[str, Any] = {}
    for code in codes(config, target):
        found.update(code.details)
    return found


def full_recipe(recipe: str, source: SpecSource | ModuleSource, batch_size: int, info: dict[str, Any]) -> str:
    """``recipe`` plus ``build()``, ``example_batch()`` and a ``__main__`` that trains 30 steps,
    where the model came from a spec (a module object handed to the API cannot be rebuilt from
    source: its recipe has ``apply`` and ``train_step`` only). ``info`` is what the inspecting
    worker found: ``target_spec``, ``factory_inputs`` (the factory gave the example batch),
    ``target_kind`` and ``fingerprint`` ({path, sha256} of the model's file)."""
    if not isinstance(source, SpecSource):
        return recipe
    build = factory_code(source, info.get("fingerprint"), bool(info.get("takes_batch_size")))
    if build is None:
        return recipe
    example = _example_code(source, batch_size, info)
    return checked(f"{recipe}\n\n# -- the model pitstop measured (seed {int(source.seed)}) and an example batch --\n\n"
                   f"{build}\n\nBATCH_SIZE = {int(batch_size)}\n\n\n{example}\n\n"
                   f'if __name__ == "__main__":\n'
                   f"    torch.manual_seed({int(source.seed)})\n"
                   f"    model, optimizer = apply(build())\n"
                   f"    batch = example_batch()\n"
                   f"    losses = [float(train_step(model, optimizer, batch)) for _ in range(30)]\n"
                   f'    print(f"loss {{losses[0]:.4f}} -> {{losses[-1]:.4f}} after {{len(losses)}} steps")\n')


def _example_code(source: SpecSource, batch_size: int, info: dict[str, Any]) -> str:
    """``example_batch()``: random inputs and target like the measured ones, or the factory's own."""
    spec = source.input_spec or source.spec.default_input_spec()
    target_text = info.get("target_spec")
    target_spec: InputSpec | None = parse_input_spec(target_text) if target_text else None
    kind = info.get("target_kind")  # None (no target), "spec", "factory" or "tensor"
    if kind == "tensor":
        target = ("raise NotImplementedError('the target was a tensor handed to pitstop.train(); pass your own "
                  "batch to train_step')")
        return f'def example_batch():\n    """Not available: the target is not code."""\n    {target}\n'
    target_code = "None" if kind is None else "value[2]" if kind == "factory" else \
        _tensor_code(target_spec, batch_size)[0][1] if target_spec is not None else "None"
    if spec is None or info.get("factory_inputs"):
        return ("def example_batch():\n"
                '    """The factory\'s own example (inputs, target)."""\n'
                "    value = factory()\n"
                "    inputs = value[1] if isinstance(value, (tuple, list)) and len(value) > 1 else ()\n"
                f"    return inputs, {target_code}\n")
    made = _tensor_code(spec, batch_size)
    args = [code for name, code in made if name is None]
    kwargs = {name: code for name, code in made if name is not None}
    inputs = f"({', '.join(args)},)" if args and not kwargs else \
        "{" + ", ".join(f"{k!r}: {v}" for k, v in kwargs.items()) + "}" if not args else \
        f"({', '.join(args)}, {{" + ", ".join(f"{k!r}: {v}" for k, v in kwargs.items()) + "})"
    return (f"def example_batch():\n"
            f"    {_docstring(f'Random (inputs, target) like the ones measured ({spec}; target {target_spec}).')}\n"
            f"    return {inputs}, {target_code}\n")


def _tensor_code(spec: InputSpec, batch_size: int) -> list[tuple[str | None, str]]:
    """(keyword or None, the expression) of each tensor of ``spec``."""
    out = []
    for t in spec.tensors:
        dtype, shape = DTYPES[t.dtype], t.shape(batch_size)
        if dtype.is_floating_point:
            code = f"torch.randn({shape}, dtype={dtype})"
        elif t.dtype == "bool":
            code = f"torch.randint(0, 2, {shape}).bool()"
        else:
            low, high = (t.low, t.high) if t.low is not None else DEFAULT_INT_RANGE
            code = f"torch.randint({low!r}, {high!r}, {shape}, dtype={dtype})"
        out.append((t.name, code))
    return out


def recipe_files(report: Reported) -> dict[str, str | bytes | Path]:
    """recipe.py and recipe.json (the winner, its evidence, the environment), as text."""
    doc = report.to_dict()
    meta = {"pitstop": doc["pitstop"], "model": report.model, "winner": doc["winner"],
            "fingerprint": report.problem.get("fingerprint"), "environment": report.environment}
    return {"recipe.py": checked(report.recipe), "recipe.json": json.dumps(meta, indent=2, allow_nan=False) + "\n"}


def write_recipe_files(report: Reported, directory: Path) -> list[str]:
    """recipe.py and recipe.json written as one folder (``pitstop._io.write_folder``); the paths."""
    from pitstop._io import write_folder

    return write_folder(directory, recipe_files(report))


def _indent(lines: list[str]) -> str:
    return textwrap.indent("\n".join(s for s in lines if s), "    ")
