"""``pitstop train``: a training script (its own arguments follow its path), or a model spec."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import ScriptParser, _env_pairs, _fraction, _positive, _seed, flag_errors
from pitstop.cli._output import Output, _progress
from pitstop.engine.scripts import TRAIN_SCRIPT_OPTIONS as SCRIPT_OPTIONS
from pitstop.errors import SettingError
from pitstop.train.techniques import MODEL_TECHNIQUES

MODEL_ONLY = ("--input", "--target", "--optimizer", "--lr", "--weight-decay", "--batch-size", "--batch-dim",
              "--memory-budget-mb", "--save")

TRAIN_EPILOG = """\
examples:
  pitstop train train.py --max-iters 200            the script's own arguments follow its path
  pitstop train --time-budget-s 600 --json t.json --patch speedup.diff train.py
  git apply speedup.diff                            the winner, as the exact lines to change
  pitstop train --nproc-per-node 2 --patch ddp.diff train.py   each variant a torchrun job
  pitstop train zoo:cnn --target 'int64[B]{0,10}' --batch-size 32 --save out/
  pitstop train my_model.py:build --input 'float32[B,3,64,64]' --target 'int64[B]{0,10}' \\
      --optimizer adamw --lr 1e-3 --batch-size 32 --save out/

A script (the first form) runs unmodified, with its own data, loss, parameter groups and
schedule: pitstop finds its training step (the optimizer it builds, the forward and the
backward, the model's name), then runs it once per variant, each in its own process, for a
bounded number of steps: bf16 autocast around the forward and loss statements (a CPU or GPU
with native bf16), torch.compile of the model (model.compile()), the optimizer's fused or
foreach flag, zero_grad(set_to_none=False), channels_last (4-D inputs), torch.set_num_threads;
under Lightning its Trainer(precision=...), under the HF Trainer TrainingArguments(bf16=...,
torch_compile=..., optim=...). The winner is printed as the lines to change and written by
--patch as a unified diff that `git apply` takes. A model spec (the second form) is measured
from its factory, with micro-batches and checkpointing too, and --save writes a recipe.

Each technique is probed alone; those faster beyond noise or by 5% are combined; the finalists
are measured interleaved next to the naive step (the unmodified script, or fp32 eager with the
for-loop optimizer). The gate (a variant that trains differently is rejected, with the
numbers): step-1 gradients against the naive run's; the loss after --trajectory-steps steps
within the spread of 3 fp32 runs of other seeds (pitstop seeds random, numpy and torch, and
shifts the seeds a script sets itself), widened by --tolerance of its decrease. The machine's
load is recorded; a thread count measured while other processes took the CPU is never chosen,
and a search whose reference drifted beyond its noise says so and exits 1. Each variant's FLOP/s
is given as a share of this machine's measured matmul peak (MFU). Compile time is reported with
its break-even step count; --steps N (the planned run) makes the choice account for it. Exit
codes: 0 ok, 1 the reference itself failed, is not finite, or could not be measured reliably
(nothing recommended or saved), 2 usage or input error, 130 interrupted."""


class _TrainParser(ScriptParser):
    """``pitstop train [OPTIONS] SCRIPT|MODEL [ARGS]`` (see ``ScriptParser``). After a script's path,
    only the options of script mode are pitstop's: ``--device=cpu`` there is the script's own."""

    def _after(self, script: str) -> tuple[str, ...]:
        return SCRIPT_OPTIONS if is_script(script) else super()._after(script)


def _add_train(sub: Any) -> None:
    p = sub.add_parser("train", help="find, prove and apply the fastest training step that still trains the same",
                       description="Measure every training-step technique inside your training script (or on a "
                                   "model), keep the fastest one whose training matches, and hand it back as a "
                                   "patch (or a recipe).",
                       epilog=TRAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    # safe: a subclass of the parser's own class that only changes how arguments after the script are read;
    # never undone: the parser lives for one command line
    p.__class__ = _TrainParser  # pitstop's options after the script path (see ScriptParser)
    p.add_argument("model", help="a training script (train.py), or a model: zoo:NAME, path/to/file.py:factory, "
                                 "package.module:factory")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    p.add_argument("--patch", metavar="FILE", help="script: write the winner as a unified diff (git apply FILE)")
    p.add_argument("--nproc-per-node", type=_positive(int), default=1, metavar="N",
                   help="script: run each variant as a torchrun job of N ranks on this machine (its DDP knobs "
                        "searched too; the slowest rank's step is the step)")
    p.add_argument("--input", metavar="SPEC", help="model: input spec, e.g. 'float32[B,3,64,64]' (a keyword input: "
                   "'input_ids=int64[B,128]{0,50257}')")
    p.add_argument("--target", metavar="SPEC", help="model: target spec, e.g. 'int64[B]{0,10}' (default: the "
                   "factory's, else none: the model's own loss, or its output when it is a scalar)")
    p.add_argument("--optimizer", default=None, metavar="NAME",
                   help="model: a torch.optim optimizer: adamw, adam, sgd, ... (default: the factory's, else adamw)")
    p.add_argument("--lr", type=_positive(float), help="model: learning rate (default: 1e-3 for the default optimizer)")
    p.add_argument("--weight-decay", type=_fraction, help="model: weight decay (a finite number >= 0)")
    p.add_argument("--batch-size", type=_positive(int), help="model: batch size (default: the zoo's largest, or the "
                   "factory's)")
    p.add_argument("--batch-dim", type=int, default=0, metavar="D",
                   help="model: the batch dimension of the inputs and the target (default: 0; 1 for sequence-first)")
    p.add_argument("--time-budget-s", type=_positive(float), default=300.0,
                   help="time for the whole search (default: 300); past it, the best so far is reported")
    p.add_argument("--steps", type=_positive(int), help="planned training steps: compilation must pay for itself")
    p.add_argument("--allow-emulated", action="store_true",
                   help="also measure (and edit) a precision this hardware only emulates (fp16 on a CPU, bf16 "
                        "without native support): for a patch meant for other hardware; the report says so")
    p.add_argument("--techniques", metavar="A,B", default=None,
                   help=f"techniques to search (default: all: {','.join(MODEL_TECHNIQUES)}; a script: all but "
                        "micro_batch and "
                        "checkpoint, and workers: its training DataLoader's num_workers, with threads; cache: its "
                        "Dataset's items made once and kept, where they are fixed); AXIS=OPTION "
                        "narrows an axis to one technique, e.g. precision=fp16-autocast")
    p.add_argument("--trajectory-steps", type=_positive(int), default=20, help="steps of the trajectory gate "
                   "(default: 20, at least 20)")
    p.add_argument("--tolerance", type=_fraction, default=0.05,
                   help="band widening as a share of the fp32 loss decrease (default: 0.05)")
    p.add_argument("--memory-budget-mb", type=_positive(float), help="model: peak memory per step allowed; tries "
                   "micro-batches and checkpointing to fit it")
    p.add_argument("--threads", type=_positive(int), help="intra-op threads (default: physical cores)")
    p.add_argument("--device", default="cpu", help="model: cpu, cuda or auto (default: cpu; a script uses its own)")
    p.add_argument("--seed", type=_seed, default=0, help="seed for weights and inputs (default: 0)")
    p.add_argument("--replicas", type=_positive(int), default=2, help="worker processes per finalist (default: 2)")
    p.add_argument("--timeout-s", type=_positive(float), default=300.0,
                   help="a worker request (the script's start-up, compile, a trajectory) taking longer fails that "
                        "variant")
    p.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                   help="environment variable for every worker (repeatable)")
    p.add_argument("--save", metavar="DIR", help="model: write recipe.py and recipe.json to DIR")
    p.add_argument("--json", metavar="FILE", help="write the JSON report, updated after each stage ('-' = stdout)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    p.set_defaults(func=_train)


_RENAMED = {"techniques": "--techniques", "memory_budget_bytes": "--memory-budget-mb", "target": "--target",
            "lr": "--lr", "weight_decay": "--weight-decay", "optimizer": "--optimizer", "save": "--save"}


def is_script(model: str) -> bool:
    """A path to a Python file (or a folder with __main__.py) with no ``:factory``: a training script."""
    from pathlib import Path

    if model.startswith("zoo:") or (":" in model and not Path(model).exists()):
        return False
    path = Path(model)
    return (path.is_file() and path.suffix == ".py") or (path.is_dir() and (path / "__main__.py").exists()) \
        or (model.endswith(".py") and ":" not in model)


def _train(args: argparse.Namespace) -> int:
    from pitstop.errors import UsageError

    script = is_script(args.model)
    given = {f for f in MODEL_ONLY if getattr(args, f.lstrip("-").replace("-", "_")) not in (None, 0)}
    if script and given:
        raise UsageError(f"{sorted(given)[0]} applies to a model spec, not to a script: the script's own data, "
                         "loss and optimizer are used")
    if not script and (args.patch or args.args or args.nproc_per_node > 1):
        extra = "--patch" if args.patch else "--nproc-per-node" if args.nproc_per_node > 1 else f"{args.args[0]!r}"
        raise UsageError(f"{extra}: {args.model!r} is a model spec; a patch and arguments go with a script "
                         "(pitstop train train.py ARGS)")
    return _train_script(args) if script else _train_model(args)


def _settings(args: argparse.Namespace, script: bool) -> Any:
    """The ``TrainSettings`` the command line asks for (script mode: only the options it has)."""
    from pitstop.train.api import settings_from
    from pitstop.train.techniques import SCRIPT_TECHNIQUES

    default = SCRIPT_TECHNIQUES if script else MODEL_TECHNIQUES
    techniques = tuple(t.strip() for t in (args.techniques or ",".join(default)).split(",") if t.strip())
    loader = next((t for t in ("workers", "cache") if t in techniques), None)
    if not script and loader:
        raise SettingError("techniques", f"{loader} varies a training script's DataLoader; a model spec has "
                                         "none: give the script (pitstop train train.py ARGS), or pitstop data "
                                         "FILE.py:FACTORY for a Dataset")
    options: dict[str, Any] = {
        "time_budget_s": args.time_budget_s, "steps": args.steps, "techniques": techniques,
        "trajectory_steps": args.trajectory_steps, "tolerance": args.tolerance, "seed": args.seed,
        "replicas": args.replicas, "timeout_s": args.timeout_s, "allow_emulated": args.allow_emulated,
        "worker_env": tuple(sorted(_env_pairs(args.worker_env).items())), "threads": args.threads}
    if script:
        options["nproc_per_node"] = args.nproc_per_node
    else:
        options.update(batch_size=args.batch_size, batch_dim=args.batch_dim, device=args.device,
                       memory_budget_mb=args.memory_budget_mb)
    return settings_from({k: v for k, v in options.items() if v is not None})


def _train_script(args: argparse.Namespace) -> int:
    from pitstop.engine.scripts import check_script
    from pitstop.train.script.api import train_script

    check_script(args.model)
    output = Output(args.json, args.html)
    with flag_errors(_RENAMED):
        settings = _settings(args, script=True)
        with _progress(output.console) as on_event:
            report = train_script(args.model, list(args.args), settings, json_path=output.result, patch=args.patch,
                                  on_event=on_event)
    output.finish(report.to_dict())
    return _exit_code(report)


def _train_model(args: argparse.Namespace) -> int:
    from pitstop.train.api import run_train
    from pitstop.train.problem import OptimizerSpec

    output = Output(args.json, args.html)
    with flag_errors(_RENAMED):
        optimizer = None
        if args.optimizer or args.lr is not None or args.weight_decay is not None:
            lr = args.lr if args.lr is not None else 1e-3
            optimizer = OptimizerSpec.named(args.optimizer or "adamw", lr=lr, weight_decay=args.weight_decay)
        settings = _settings(args, script=False)
        with _progress(output.console) as on_event:
            report = run_train(args.model, args.input, args.target, optimizer=optimizer, settings=settings,
                               save=args.save, json_path=output.result, on_event=on_event)
    output.finish(report.to_dict())
    return _exit_code(report)


def _exit_code(report: Any) -> int:
    return 130 if report.outcome.interrupted else 1 if report.outcome.failed else 0
