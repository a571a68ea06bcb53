"""``pitstop optimize``."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import _env_pairs, _int_list, _positive, _seed, flag_errors
from pitstop.cli._output import Output, _progress
from pitstop.cli.generate import GENERATE_HELP, add_generate_flags, check_flags, run_generate

OPTIMIZE_EPILOG = """\
examples:
  pitstop optimize zoo:cnn --batch-size 16
  pitstop optimize zoo:resnet50 --batch-size 8 --save out/        # needs pip install "pitstop[zoo]"
  pitstop optimize my_model.py:build --input 'int64[B,128]{0,30522}' --objective throughput --save out/
  pitstop optimize zoo:bert-base --latency-budget-ms 500 --batch-sizes 1,4,8,16 --json opt.json
  pitstop optimize zoo:llama-tiny --generate 64 --prompt-len 128 --batch-sizes 1,8 --save out/
  pitstop optimize my_lm.py:build --generate 128 --prompt-len 512 --json g.json

How it searches (within --time-budget-s): from eval+inference_mode, each technique is probed
alone (bf16/fp16 autocast, bf16 weights, torch.compile modes, int8 dynamic quantization,
channels_last, thread counts, ONNX Runtime); those that cannot run here are skipped with the
reason, those that change the answers beyond --tolerance are rejected. Techniques faster beyond
noise or by 5% are combined, and compile is always tried on top of reduced precision (they
compose better than alone); on CPU, compile max-autotune is tried on the best compiled finalist
instead of alone. The finalists are measured interleaved in worker processes. The winner is
the fastest whose speed-up interval excludes 1 (a simpler candidate within noise and 3% is
preferred); otherwise eval+inference_mode stays.

Fidelity: every candidate vs the fp32 eager eval output on --fidelity-samples rows (default 128,
in batches shaped like the timing batch): fp32 variants rel err <= 1e-4 (or as close to an fp64
run as eager is), bf16/fp16/int8 rel err <= 2e-2 and argmax agreement >= 99%, where a flip
between logits tied closer than the candidate's error scale is excused (raw and margin-aware
agreement are both reported). --metric FILE.py:FN scores each candidate on your own data instead
(FN(model) -> score, higher is better): a candidate within --metric-tolerance of the fp32
model's score is admitted, e.g.
  pitstop optimize my_model.py:build --input 'float32[B,64]' --metric my_metric.py:accuracy
int8 quantizes each layer type with its best API: torch.ao dynamic int8 for LSTM/GRU and eager
Linear, torchao for compiled Linear; int8-dynamic+onnxruntime quantizes the exported graph.
Generation (--generate NEW_TOKENS, a causal LM): see "Generation" below.
Objectives: latency (at --batch-size), throughput (most samples/s over --batch-sizes), and
--latency-budget-ms X (most samples/s with p90 latency per batch under X).
--save DIR writes recipe.py (rebuilds and applies it without pitstop), recipe.json and, for
ONNX Runtime, model.onnx. Exit codes: 0 ok, 1 the start point itself failed (nothing recommended,
nothing saved), 2 usage or input error, 130 interrupted.

""" + GENERATE_HELP


SEARCH_AXES = ("precision", "compile", "quant", "layout", "threads", "runtime")  # = search.AXES (tested);


def _add_optimize(sub: Any) -> None:
    AXES = SEARCH_AXES

    opt = sub.add_parser("optimize", help="find, prove and apply the fastest way to run a model here",
                         description="Measure every inference technique on your model, keep the fastest that "
                                     "gives the same answers, and print it as a recipe.",
                         epilog=OPTIMIZE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    opt.add_argument("model", help="zoo:NAME, path/to/file.py:factory or package.module:factory")
    opt.add_argument("--input", metavar="SPEC", help="input spec, e.g. 'float32[B,3,224,224]'")
    opt.add_argument("--batch-size", type=_positive(int), help="batch size the search runs at (default: "
                     "the smallest default batch for latency, the largest for throughput)")
    opt.add_argument("--batch-sizes", type=_int_list, metavar="N,N",
                     help="batch sizes of the latency-vs-throughput sweep (default: the zoo model's)")
    opt.add_argument("--objective", choices=("latency", "throughput"), default="latency",
                     help="latency at --batch-size, or most samples/s over --batch-sizes (default: latency)")
    opt.add_argument("--latency-budget-ms", type=_positive(float), metavar="X",
                     help="most samples/s with p90 latency per batch at most X ms")
    opt.add_argument("--time-budget-s", type=_positive(float), default=300.0,
                     help="time for the whole search (default: 300); past it, the best so far is reported")
    opt.add_argument("--techniques", metavar="A,B",
                     help=f"axes to search (default: all: {','.join(AXES)}; with --generate: "
                          "cache,compile,precision,attention,quant,threads,lookup)")
    opt.add_argument("--tolerance", type=_positive(float), metavar="REL",
                     help="relative-error limit for every candidate (default: 1e-4 fp32, 2e-2 bf16/fp16/int8)")
    opt.add_argument("--fidelity-samples", type=_positive(int), default=128, metavar="N",
                     help="rows fidelity is measured on, in batches like the timing batch (default: 128)")
    opt.add_argument("--metric", metavar="FILE.py:FN",
                     help="your task metric: FN(model) -> score on your own data (higher is better) admits candidates")
    opt.add_argument("--metric-tolerance", type=float, default=0.01, metavar="X",
                     help="admit a candidate whose metric is at most X below the fp32 model's (default: 0.01)")
    opt.add_argument("--threads", type=_positive(int), help="intra-op threads (default: physical cores)")
    opt.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    opt.add_argument("--seed", type=_seed, default=0, help="seed for weights and inputs (default: 0)")
    opt.add_argument("--replicas", type=_positive(int), default=2,
                     help="worker processes per finalist (default: 2)")
    opt.add_argument("--timeout-s", type=_positive(float), default=300.0,
                     help="a worker request (compile, export, a round) taking longer fails that candidate")
    opt.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                     help="environment variable for every worker (repeatable)")
    opt.add_argument("--save", metavar="DIR", help="write recipe.py, recipe.json (and model.onnx) to DIR")
    opt.add_argument("--json", metavar="FILE", help="write the JSON report, updated after each stage ('-' = stdout)")
    opt.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    add_generate_flags(opt, bench=False)
    opt.set_defaults(func=_optimize)


def _optimize(args: argparse.Namespace) -> int:
    if args.generate is not None:
        return run_generate(args, bench_only=False)
    check_flags(args)
    from pitstop.optimize.api import apply_report, run_search
    from pitstop.optimize.settings import OptimizeSettings

    output = Output(args.json, args.html)
    if args.save:  # a folder pitstop can replace as a whole, checked before minutes of measuring
        from pitstop._io import check_folder

        with flag_errors():
            check_folder(args.save)
    with flag_errors():
        settings = OptimizeSettings(
            objective=args.objective, batch_size=args.batch_size, batch_sizes=args.batch_sizes,
            latency_budget_ms=args.latency_budget_ms, time_budget_s=args.time_budget_s,
            techniques=tuple(t.strip() for t in (args.techniques or ",".join(SEARCH_AXES)).split(",") if t.strip()),
            tolerance=args.tolerance,
            threads=args.threads, device=args.device, seed=args.seed, replicas=args.replicas,
            timeout_s=args.timeout_s, worker_env=tuple(sorted(_env_pairs(args.worker_env).items())),
            fidelity_samples=args.fidelity_samples, metric=args.metric, metric_tolerance=args.metric_tolerance)
        with _progress(output.console) as on_event:
            source, report, sink = run_search(args.model, args.input, settings, json_path=output.result,
                                              on_event=on_event)
            if args.save and not report.outcome.interrupted and not report.outcome.failed:
                on_event and on_event("phase", {"text": f"writing the recipe to {args.save}"})
                apply_report(source, report, args.save, sink)
    output.finish(report.to_dict())
    return 130 if report.outcome.interrupted else 1 if report.outcome.failed else 0
