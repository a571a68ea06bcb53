"""``pitstop memory`` and ``pitstop gradcheck``."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import _positive, _seed, flag_errors
from pitstop.cli._output import Output
from pitstop.cli._resolve import _resolve
from pitstop.errors import UsageError

MEMORY_EPILOG = """\
examples:
  pitstop memory zoo:transformer --batch-size 8            per-module activation bytes and forward time
  pitstop memory zoo:transformer --batch-size 8 --budget 50%      checkpoint blocks to halve activations
  pitstop memory my_model.py:build --input 'float32[B,3,224,224]' --budget 2GiB --json mem.json
  pitstop gradcheck my_ops.py:my_function --input 'float64[4,8]'

How it measures: one forward + backward in train mode with saved_tensors_hooks: every tensor
autograd saves is attributed to the innermost module running when it was saved, counted once
per storage; parameters and inputs are counted apart. Forward time per module from forward
hooks (median of --repeats). The peak of a training step: the CUDA allocator's peak, or on CPU
exact accounting of every storage created during the step. --budget (a percentage of today's
activations, or bytes: 512MiB, 2GiB) checkpoints blocks (members of ModuleList/Sequential
containers; embeddings and output projections only as a last resort) by bytes saved per ms of
recompute, then measures activations and step time before and after, interleaved.
Exit codes: 0 ok (1 when --budget cannot be met), 2 usage error."""


def _budget(text: str) -> float | int:
    """``50%`` -> 0.5; ``512MiB``/``2GiB``/``1000000`` -> bytes."""
    t = text.strip().lower().replace(" ", "")
    units = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "kb": 10**3, "mb": 10**6, "gb": 10**9, "b": 1, "": 1}
    try:
        if t.endswith("%"):
            value = float(t[:-1]) / 100
            if not 0 < value <= 1:
                raise ValueError
            return value
        unit = next(u for u in sorted(units, key=len, reverse=True) if t.endswith(u))
        n = int(float(t[: len(t) - len(unit)] if unit else t) * units[unit])
        if n <= 0:
            raise ValueError
        return n
    except (ValueError, OverflowError, StopIteration):  # nan, inf, 'lots'
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage (50%) or a size (512MiB, 2GiB)") from None


def _add_memory(sub: Any) -> None:
    mem = sub.add_parser("memory", help="activation memory per module; checkpointing to meet a budget",
                         description="Measure the bytes each module saves for backward and its forward time; "
                                     "with --budget, checkpoint blocks until activations fit, measured.",
                         epilog=MEMORY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    mem.add_argument("model", help="zoo:NAME, path/to/file.py:factory or package.module:factory")
    mem.add_argument("--input", metavar="SPEC", help="input spec (default: the factory's or zoo model's)")
    mem.add_argument("--batch-size", type=_positive(int), default=8, help="default: 8")
    mem.add_argument("--budget", type=_budget, help="activation budget: 50%% of today's, or bytes (512MiB)")
    mem.add_argument("--candidates", metavar="A,B", help="blocks to choose from (module names)")
    mem.add_argument("--repeats", type=_positive(int), default=5, help="timed steps per measurement (default: 5)")
    mem.add_argument("--top", type=_positive(int), help="show only the N modules saving the most")
    mem.add_argument("--seed", type=_seed, default=0)
    mem.add_argument("--json", metavar="FILE", help="write the JSON report ('-' = stdout)")
    mem.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    mem.set_defaults(func=_memory)
    grad = sub.add_parser("gradcheck", help="check a function's gradients in float64 (gradcheck + gradgradcheck)",
                          description="Run gradcheck and gradgradcheck in float64 on a function and report, "
                                      "per input, the worst element. Exit 1 when a check fails.",
                          formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog="example:\n  pitstop gradcheck my_ops.py:my_function "
                                 "--input 'float64[4,8];float64[8]'")
    grad.add_argument("function", help="path/to/file.py:function or package.module:function")
    grad.add_argument("--input", metavar="SPEC", required=True, help="input spec(s), e.g. 'float64[4,8]'")
    grad.add_argument("--seed", type=_seed, default=0)
    grad.add_argument("--no-second-order", action="store_true", help="skip gradgradcheck")
    grad.add_argument("--json", metavar="FILE", help="write the result as JSON ('-' = stdout)")
    grad.add_argument("--html", metavar="FILE", help="write the result as a self-contained HTML page")
    grad.set_defaults(func=_gradcheck)


def _memory(args: argparse.Namespace) -> int:
    import torch

    from pitstop._env import environment
    from pitstop.engine.source import first_forward
    from pitstop.memory import activation_report, checkpoint
    from pitstop.models.inputs import parse_input_spec
    from pitstop.models.spec import parse_model_spec

    output = Output(args.json, args.html)
    spec = parse_model_spec(args.model)
    model, inputs = spec.build(args.batch_size, seed=args.seed)
    if args.input or inputs is None:
        with flag_errors():
            input_spec = parse_input_spec(args.input) if args.input else spec.default_input_spec()
            if input_spec is None:
                raise UsageError(f"model {args.model}: give --input (the factory returns no example inputs)")
            inputs = input_spec.make(args.batch_size, seed=args.seed)
    first_forward(args.model, model, inputs, torch.device("cpu"))  # a mismatched input: one line, exit 2
    console = output.console
    with console.status("measuring activations (one accounted step, then timed steps)"):
        report = activation_report(model, inputs, repeats=args.repeats)
    doc = report.to_dict()
    doc["environment"] = environment()
    doc["model"], doc["batch_size"] = args.model, args.batch_size
    doc["top"] = args.top  # how many modules the table shows (None: all)
    code = 0
    if args.budget is not None:
        names = [n.strip() for n in args.candidates.split(",")] if args.candidates else None
        with console.status("choosing blocks and measuring before/after"):
            plan = checkpoint(model, inputs, budget=args.budget, candidates=names, repeats=args.repeats)
        doc["checkpoint"] = plan.to_dict()
        code = 0 if plan.met else 1
    output.finish(doc)
    return code


def _gradcheck(args: argparse.Namespace) -> int:
    from pitstop.models.inputs import parse_input_spec
    from pitstop.numerics import verify_gradients

    output = Output(args.json, args.html)
    fn = _resolve(args.function, "function")
    with flag_errors():
        inputs = parse_input_spec(args.input).make(1, seed=args.seed)
    try:
        result = verify_gradients(fn, *inputs.args, second_order=not args.no_second_order)
    except ValueError as exc:
        raise UsageError(f"gradcheck {args.function}: {exc}") from None
    from pitstop._env import environment

    output.finish(result.to_dict(environment(), function=args.function, input=args.input))
    return 0 if result.ok else 1
