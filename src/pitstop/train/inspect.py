"""The first look at the user's model, in a worker process (never in pitstop's own): build it,
find its batch, target, loss and optimizer, run the first forward and the first fp32 training
step, take the reference gradients of two seeds, and write the payload every variant's worker
loads. What can go wrong here is the user's to fix (``usage``: exit 2) or the reference itself
failing (``reference``: exit 1); either comes back as a one-line reason, never a traceback."""

from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop.errors import PitstopError, SettingError, last_line
from pitstop.models.inputs import Inputs
from pitstop.train.config import NAIVE
from pitstop.train.fidelity import gradient_report
from pitstop.train.problem import LossSpec, OptimizerSpec, own_loss
from pitstop.train.variants import TrainTarget


class InspectError(Exception):
    """Why the problem cannot be trained here: ``kind`` is ``usage`` or ``reference``; ``field``
    the setting at fault, where one is (``input``, ``target``: the CLI names its flag)."""

    def __init__(self, kind: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.field = kind, field


def inspect(job: dict[str, Any], workdir: Path, module: nn.Module | None = None,
            inputs: Inputs | None = None, target: Any = None) -> dict[str, Any]:
    """Everything the search needs to know (see the module docstring); ``module``, ``inputs`` and
    ``target`` are given inline (a module object that cannot cross to a process), else loaded."""
    try:
        return _inspect(job, workdir, module, inputs, target)
    except InspectError:
        raise
    except SettingError as exc:
        raise InspectError("usage", exc.problem, exc.field) from None
    except PitstopError as exc:
        raise InspectError("usage", str(exc)) from None


def _inspect(job: dict[str, Any], workdir: Path, module: nn.Module | None, inputs: Inputs | None,
             target: Any) -> dict[str, Any]:
    seed, device = int(job["seed"]), torch.device(job["device"])
    info: dict[str, Any] = {"factory_inputs": False, "takes_batch_size": False, "fingerprint": None}
    extras: dict[str, Any] = {}
    if module is None:
        module, inputs, target, extras = _load(job, info)
    assert inputs is not None
    batch_size, batch_dim = _batch_size(job, inputs), int(job.get("batch_dim", 0))
    if target is None and job.get("target_spec"):
        from pitstop.models.inputs import parse_input_spec

        spec = parse_input_spec(job["target_spec"], "target")
        target, info["target_kind"] = spec.make(batch_size, seed=seed + 1).args[0], "spec"
    elif target is None and extras.get("target") is not None:
        target, info["target_kind"] = extras["target"], "factory"
    elif target is not None:
        info["target_kind"] = info.get("target_kind") or "tensor"
    _check_batch(inputs, target, batch_size, batch_dim)
    _check_trainable(job["name"], module)
    output = _first_forward(job["name"], module, inputs, device)
    loss = _loss(job, extras, output, target)
    optimizer = _optimizer(job, extras, module)
    info.update(batch_size=batch_size, inputs=inputs.describe(), loss=loss.to_dict(), optimizer=optimizer.to_dict(),
                has_target=target is not None and loss.needs_target)
    if not info["has_target"]:
        target = None
    return _reference(job, info, module, inputs, target, workdir, device)


def _load(job: dict[str, Any], info: dict[str, Any]) -> tuple[nn.Module, Inputs, Any, dict[str, Any]]:
    """Model, inputs, target and factory extras (target, loss_fn, optimizer) from the job's source."""
    source = job["source"]
    if source["kind"] == "pickle":
        saved = torch.load(source["inputs"], weights_only=False)  # noqa: PIT501 (written by pitstop's parent)
        module = torch.load(source["path"], weights_only=False)  # noqa: PIT501 (likewise)
        return module, Inputs(tuple(saved["args"]), dict(saved["kwargs"])), saved.get("target"), {}
    from pitstop.engine.source import SpecSource
    from pitstop.models.inputs import parse_input_spec
    from pitstop.models.spec import parse_model_spec, seed_everything

    spec = parse_model_spec(source["spec"])
    spec_source = SpecSource(spec, parse_input_spec(source["input"]) if source.get("input") else None,
                             int(job["seed"]))
    info["takes_batch_size"] = spec.kind != "zoo" and spec.takes_batch_size()
    if spec.kind in ("file", "module"):
        from pitstop.engine.fingerprint import spec_fingerprint

        info["fingerprint"] = spec_fingerprint(spec)
    extras = {} if spec.kind == "zoo" else _extras(spec, int(job["seed"]))
    given = spec_source.input_spec or spec.default_input_spec()
    if job.get("batch_size") is None:
        _, example = spec.build(None, seed=int(job["seed"]))
        job["batch_size"] = (example.batch_size() if example is not None and given is None else None) or \
            (spec_source.default_batch_sizes()[-1] if given is not None else 1)
    info["factory_inputs"] = given is None
    seed_everything(int(job["seed"]))
    module, inputs = spec_source.materialize(int(job["batch_size"]))
    return module, inputs, None, extras


def _extras(spec: Any, seed: int) -> dict[str, Any]:
    """(target, loss_fn, optimizer) from a factory that returns ``(model, inputs, target, ...)``."""
    from pitstop.models.spec import seed_everything

    seed_everything(seed)
    value = spec.resolve()()
    if not isinstance(value, tuple | list) or len(value) <= 2:
        return {}
    return dict(zip(("target", "loss_fn", "optimizer"), value[2:], strict=False))


def _batch_size(job: dict[str, Any], inputs: Inputs) -> int:
    """The job's batch size, else the inputs' common size along the batch dimension."""
    dim = int(job.get("batch_dim", 0))
    sizes = {t.shape[dim] for t in inputs.tensors() if t.dim() > dim}
    return int(job.get("batch_size") or (sizes.pop() if len(sizes) == 1 else 1))


def _check_batch(inputs: Inputs, target: Any, batch_size: int, dim: int) -> None:
    """The inputs and the target share the batch size along ``dim``."""
    for t in inputs.tensors():
        if t.dim() <= dim:
            raise InspectError("usage", f"an input of shape {tuple(t.shape)} has no batch dimension {dim}; "
                                        "give batch_dim, the dimension of the batch in your inputs")
    if isinstance(target, torch.Tensor) and (target.dim() <= dim or target.shape[dim] != batch_size):
        raise InspectError("usage", f"its batch dimension {dim} must be the batch size {batch_size}, got "
                                    f"shape {tuple(target.shape)}; pass the target of the example batch", "target")


def _check_trainable(name: str, module: nn.Module) -> None:
    if not any(p.requires_grad for p in module.parameters()):
        what = "no parameters" if not any(True for _ in module.parameters()) else \
            "only frozen parameters (requires_grad=False)"
        raise InspectError("usage", f"model {name} has {what}: there is nothing to train")


def _first_forward(name: str, module: nn.Module, inputs: Inputs, device: torch.device) -> Any:
    """The model once (eval mode, no grad: the output's structure, no batch-norm statistics
    moved); a failure is a usage error."""
    placed = inputs.map(lambda t: t.to(device))
    was_training = module.training
    module.to(device).eval()
    try:
        # the user's loss runs on this output next: an inference tensor would refuse its in-place ops
        with torch.no_grad():  # noqa: PIT202
            return module(*placed.args, **placed.kwargs)
    except Exception as exc:
        raise InspectError("usage", f"model {name}: the first forward on {inputs.describe()} failed: "
                                    f"{last_line(exc)}") from None
    finally:
        module.train(was_training)


def _loss(job: dict[str, Any], extras: dict[str, Any], output: Any, target: Any) -> LossSpec:
    """The loss: the user's (given, or from the factory), else the model's own, else the output
    when it is a scalar, else cross-entropy against the target; no target and none of these is a
    usage error (never the mean of the logits)."""
    if job.get("loss"):
        return LossSpec.from_dict(job["loss"])
    if extras.get("loss_fn") is not None:
        return LossSpec.of(extras["loss_fn"], target is not None)
    own = own_loss(output)
    if own is not None:
        return LossSpec.own(*own)
    if isinstance(output, torch.Tensor) and output.dim() == 0 and output.is_floating_point():
        return LossSpec.the_output()
    if target is None:
        shape = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
        raise InspectError("usage", f"the model's output ({shape}) is not a scalar loss and carries none (no "
                                    "`.loss`), and there is no target: give a target (cross-entropy on the "
                                    "logits) or a loss function")
    return LossSpec.default()


def _optimizer(job: dict[str, Any], extras: dict[str, Any], module: nn.Module) -> OptimizerSpec:
    if job.get("optimizer"):
        return OptimizerSpec.from_dict(job["optimizer"])
    if extras.get("optimizer") is not None:
        return OptimizerSpec.from_factory(extras["optimizer"], module)
    return OptimizerSpec.named("adamw", lr=1e-3)


def _reference(job: dict[str, Any], info: dict[str, Any], module: nn.Module, inputs: Inputs, target: Any,
               workdir: Path, device: torch.device) -> dict[str, Any]:
    """The fp32 reference: one naive step per seed (0 and 1), its loss finite, its gradients; the
    target of the variants; the payload."""
    from pitstop._env import has_compiler, native_bf16, physical_cores
    from pitstop.train.recipe import recipe_source

    loss, optimizer = LossSpec.from_dict(info["loss"]), OptimizerSpec.from_dict(info["optimizer"])
    kind = "cuda" if job["device"].startswith("cuda") else "cpu"
    target_ = TrainTarget(device=kind, native_bf16=native_bf16(kind), compiler=has_compiler(),
                          physical_cores=physical_cores(), has_4d_input=any(t.dim() == 4 for t in inputs.tensors()),
                          batch_size=info["batch_size"], optimizer_flags=optimizer.flags)
    batch = (_batch_inputs(inputs), target)
    recipe = recipe_source(NAIVE, target_, int(job["threads"]), optimizer, loss, batch_dim=int(job.get("batch_dim", 0)))
    grads, losses = [], []
    for seed in (0, 1):
        g, value = _step(recipe, module, batch, seed, workdir)
        grads.append(g)
        losses.append(value)
    info["flops_per_step"], info["peaks"] = _flops_and_peaks(recipe, module, batch, workdir, job["device"])
    if not all(math.isfinite(v) for v in losses):
        raise InspectError("reference", f"the fp32 reference's first loss is not finite ({losses[0]}): there is no "
                                        "training to compare with; fix the model or the data first")
    bad = [n for n, g in grads[0].items() if not bool(torch.isfinite(g).all())]
    if bad:
        raise InspectError("reference", f"the fp32 reference's first gradients are not finite in {', '.join(bad[:3])}")
    blocks = _checkpoint_blocks(job, module, inputs)
    target_ = dataclasses.replace(target_, checkpoint_blocks=blocks)
    payload = workdir / "payload.pt"
    source = job["source"]
    where = {"kind": "spec", "spec": source["spec"], "seed": int(job["seed"])} if source["kind"] == "spec" else \
        {"kind": "pickle", "path": source["path"]} if source["kind"] == "pickle" else {"kind": "inline"}
    torch.save({"source": where,
                "batch_size": info["batch_size"], "args": list(inputs.args), "kwargs": dict(inputs.kwargs),
                "target": target,
                "state_dict": {k: v.detach().cpu() for k, v in module.state_dict().items()}
                if source["kind"] == "spec" else None, "reference_grads": grads[0]}, payload)
    report = gradient_report(grads[1], grads[0])
    info.update(target=target_.to_dict(), seed_cosine=report["overall_cosine"], first_loss=losses[0],
                payload=str(payload))
    return info


def _flops_and_peaks(recipe: str, module: nn.Module, batch: Any, workdir: Path, device: str
                     ) -> tuple[int | None, dict[str, float]]:
    """FLOPs of one training step (forward and backward, ``torch.utils.flop_counter`` on a third
    reference step) and this machine's matmul peaks at the run's thread count: the MFU of each
    variant. None and {} when counting fails (an op the counter cannot see through)."""
    from torch.utils.flop_counter import FlopCounterMode

    from pitstop.train.peaks import machine

    try:
        with FlopCounterMode(display=False) as mode:
            _step(recipe, module, batch, 0, workdir)
        flops = int(mode.get_total_flops()) or None
        return flops, dict(machine(device)["peak_flops"])
    except Exception:  # MFU is a bonus: the search goes on without it
        return None, {}


def _batch_inputs(inputs: Inputs) -> Any:
    """The recipe's ``inputs`` of a batch: positional ones as a tuple, keyword ones as a dict after them."""
    return (*inputs.args, dict(inputs.kwargs)) if inputs.kwargs else tuple(inputs.args)


def _step(recipe: str, module: nn.Module, batch: Any, seed: int, workdir: Path
          ) -> tuple[dict[str, torch.Tensor], float]:
    """One naive training step from ``module``'s weights: the gradients by name and the loss."""
    from pitstop.engine.recipe import build

    threads = torch.get_num_threads()
    ns = build(recipe, workdir / "reference.py", name="pitstop_train_reference")
    model = copy.deepcopy(module)
    try:
        model, optimizer = ns["apply"](model)
        torch.manual_seed(seed)
        optimizer.zero_grad(set_to_none=True)
        loss = float(ns["forward_backward"](model, batch))
    except Exception as exc:
        raise InspectError("usage", f"the first training step (fp32, as naive) failed: {last_line(exc)}") from None
    finally:
        torch.set_num_threads(threads)
    grads = {n: p.grad.detach().cpu().float().clone() for n, p in model.named_parameters() if p.grad is not None}
    return grads, loss


def _checkpoint_blocks(job: dict[str, Any], module: nn.Module, inputs: Inputs) -> tuple[str, ...]:
    """The blocks ``pitstop.memory.checkpoint`` picks for half the activation memory, when a memory
    budget is given and the model has blocks; else none (the axis is skipped)."""
    if not job.get("memory_budget") or "checkpoint" not in job.get("techniques", ()):
        return ()
    from pitstop.memory import checkpoint, uncheckpoint  # the memory capability's public API

    model = copy.deepcopy(module).train()
    try:
        plan = checkpoint(model, tuple(inputs.args), 0.5, repeats=1)
    except PitstopError:
        return ()
    finally:
        uncheckpoint(model)
    return tuple(plan.chosen)
