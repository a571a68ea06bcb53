"""``pitstop train``."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import _env_pairs, _fraction, _positive, _seed, flag_errors
from pitstop.cli._output import Output, _check_dir, _progress

TRAIN_AXES = ("precision", "compile", "optimizer", "zero_grad", "layout", "threads", "micro_batch", "checkpoint")

TRAIN_EPILOG = """\
examples:
  pitstop train zoo:cnn --target 'int64[B]{0,10}' --batch-size 32 --save out/
  pitstop train my_model.py:build --input 'float32[B,3,64,64]' --target 'int64[B]{0,10}' \
      --optimizer adamw --lr 1e-3 --batch-size 32 --save out/
  pitstop train zoo:transformer --target 'int64[B]{0,10}' --steps 2000 --json train.json --html train.html

What it measures (within --time-budget-s): every training-step technique against the naive step
(fp32 eager, the optimizer's for-loop implementation, zero_grad(set_to_none=True)): bf16 autocast
(where the CPU or GPU has native bf16), fp16 autocast + GradScaler (CUDA), torch.compile
(default; reduce-overhead on CUDA), foreach / fused optimizers, zero_grad filling zeros,
channels_last (4-D inputs), thread counts, micro-batches with gradient accumulation (the
effective batch stays), activation checkpointing (under --memory-budget-mb). Each is probed
alone; those faster beyond noise or by 5% are combined; the finalists are measured interleaved
in worker processes next to the naive step.

The gate (a variant that trains differently is rejected, with the numbers): step-1 gradients vs
fp32 eager (per-parameter cosine and relative error, reported; rejected only when the overall
cosine is below 0.9 x that of two fp32 seeds); the loss after --trajectory-steps steps must lie
within the fp32 reference's spread over 3 seeds, widened by --tolerance of its decrease; GradScaler
skipping more than 1% of the steps. Compile time is reported with its break-even step count;
--steps N (the planned run) makes the choice account for it. --save DIR writes recipe.py
(build_optimizer, apply, train_step(model, optimizer, batch); runs without pitstop) and
recipe.json (the folder is written whole; a failed or interrupted run leaves it as it was). Exit
codes: 0 ok, 1 the fp32 reference itself failed or is not finite (nothing recommended or saved),
2 usage or input error, 130 interrupted."""


def _add_train(sub: Any) -> None:
    p = sub.add_parser("train", help="find, prove and apply the fastest training step that still trains the same",
                       description="Measure every training-step technique on your model, keep the fastest one "
                                   "whose training matches fp32, and print it as a recipe.",
                       epilog=TRAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="zoo:NAME, path/to/file.py:factory or package.module:factory")
    p.add_argument("--input", metavar="SPEC", help="input spec, e.g. 'float32[B,3,64,64]'")
    p.add_argument("--target", metavar="SPEC", help="target spec, e.g. 'int64[B]{0,10}' (default: the factory's, "
                   "else none: the model's own loss, or its output when it is a scalar)")
    p.add_argument("--optimizer", default=None, metavar="NAME",
                   help="a torch.optim optimizer: adamw, adam, sgd, ... (default: the factory's, else adamw)")
    p.add_argument("--lr", type=_positive(float), help="learning rate (default: 1e-3 for the default optimizer)")
    p.add_argument("--weight-decay", type=_fraction, help="weight decay (a finite number >= 0)")
    p.add_argument("--batch-size", type=_positive(int), help="batch size (default: the zoo's largest, or the "
                   "factory's)")
    p.add_argument("--batch-dim", type=int, default=0, metavar="D",
                   help="the batch dimension of the inputs and the target (default: 0; 1 for sequence-first)")
    p.add_argument("--time-budget-s", type=_positive(float), default=300.0,
                   help="time for the whole search (default: 300); past it, the best so far is reported")
    p.add_argument("--steps", type=_positive(int), help="planned training steps: compilation must pay for itself")
    p.add_argument("--techniques", metavar="A,B", default=",".join(TRAIN_AXES),
                   help=f"axes to search (default: all: {','.join(TRAIN_AXES)})")
    p.add_argument("--trajectory-steps", type=_positive(int), default=20, help="steps of the trajectory gate "
                   "(default: 20, at least 20)")
    p.add_argument("--tolerance", type=_fraction, default=0.05,
                   help="band widening as a share of the fp32 loss decrease (default: 0.05)")
    p.add_argument("--memory-budget-mb", type=_positive(float), help="peak memory per step allowed; tries "
                   "micro-batches and checkpointing to fit it")
    p.add_argument("--threads", type=_positive(int), help="intra-op threads (default: physical cores)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    p.add_argument("--seed", type=_seed, default=0, help="seed for weights and inputs (default: 0)")
    p.add_argument("--replicas", type=_positive(int), default=2, help="worker processes per finalist (default: 2)")
    p.add_argument("--timeout-s", type=_positive(float), default=300.0,
                   help="a worker request (compile, a trajectory) taking longer fails that variant")
    p.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                   help="environment variable for every worker (repeatable)")
    p.add_argument("--save", metavar="DIR", help="write recipe.py and recipe.json to DIR")
    p.add_argument("--json", metavar="FILE", help="write the JSON report, updated after each stage ('-' = stdout)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    p.set_defaults(func=_train)


_RENAMED = {"axes": "--techniques", "memory_budget_bytes": "--memory-budget-mb", "target": "--target",
            "lr": "--lr", "weight_decay": "--weight-decay", "optimizer": "--optimizer", "save": "--save"}


def _train(args: argparse.Namespace) -> int:
    from pitstop.report.train import renderables
    from pitstop.train.api import run_train
    from pitstop.train.problem import OptimizerSpec

    output = Output(args.json, args.html)
    save = _check_dir(args.save) if args.save else None
    with flag_errors(_RENAMED):
        optimizer = None
        if args.optimizer or args.lr is not None or args.weight_decay is not None:
            lr = args.lr if args.lr is not None else 1e-3
            optimizer = OptimizerSpec.named(args.optimizer or "adamw", lr=lr, weight_decay=args.weight_decay)
        options: dict[str, Any] = {k: v for k, v in {"batch_size": args.batch_size, "threads": args.threads}.items()
                                   if v is not None}
        techniques = tuple(t.strip() for t in args.techniques.split(",") if t.strip())
        with _progress(output.console) as on_event:
            report = run_train(
                args.model, args.input, args.target, optimizer=optimizer, time_budget_s=args.time_budget_s,
                steps=args.steps, techniques=techniques, trajectory_steps=args.trajectory_steps,
                tolerance=args.tolerance, memory_budget_mb=args.memory_budget_mb, device=args.device,
                seed=args.seed, replicas=args.replicas, timeout_s=args.timeout_s, batch_dim=args.batch_dim,
                worker_env=tuple(sorted(_env_pairs(args.worker_env).items())), save=save,
                json_path=output.result, on_event=on_event, target_flag="--target", **options)
    output.finish(renderables(report), report.to_dict)
    return 130 if report.outcome.interrupted else 1 if report.outcome.failed else 0
