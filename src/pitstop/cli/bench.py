"""``pitstop bench``."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import _env_pairs, _int_list, _positive, _seed, flag_errors
from pitstop.cli._output import Output, _progress
from pitstop.cli.generate import GENERATE_HELP, add_generate_flags, check_flags, run_generate

BENCH_EPILOG = """\
examples:
  pitstop bench zoo:mlp                                   the published MLP benchmark, measured here
  pitstop bench zoo:cnn --batch-sizes 1,32 --json out.json
  pitstop bench my_model.py:build --input 'float32[B,3,224,224]' --batch-sizes 1,8
  pitstop bench pkg.models:make --input 'int64[B,128]{0,30522}' --variants eval+no_grad,eval+inference_mode
  pitstop bench zoo:gpt2-tiny --generate 32 --prompt-len 64 --techniques cache,precision

model spec:  zoo:NAME (mlp, cnn, transformer) | path/to/file.py:factory | package.module:factory
             a factory returns an nn.Module or (module, example_inputs); it may take batch_size
input spec:  DTYPE[DIMS]{lo,hi}, B = batch size, several inputs joined with ';'

How it measures: each variant runs in its own worker process; after a warm-up, variants are
timed in interleaved rounds until every median's 95% interval is within --target or the
--budget-s of timed seconds per variant is spent. Speed-ups carry a bootstrap 95% interval;
"within noise" means the interval contains 1. Exit codes: 0 ok, 2 usage or input error,
130 interrupted (partial results printed and kept in --json).

""" + GENERATE_HELP


def _add_bench(sub: Any) -> None:
    bench = sub.add_parser("bench", help="measure the grad-mode variants of a model",
                           description="Measure train+grad, eval+grad, eval+no_grad and eval+inference_mode "
                                       "on your model, side by side, with intervals and fidelity.",
                           epilog=BENCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("model", help="zoo:NAME, path/to/file.py:factory or package.module:factory")
    bench.add_argument("--input", metavar="SPEC", help="input spec, e.g. 'float32[B,3,224,224]' (default: "
                       "the factory's example inputs or the zoo model's)")
    bench.add_argument("--batch-sizes", type=_int_list, metavar="N,N", help="batch sizes (default: the zoo "
                       "model's, else the example inputs' own)")
    bench.add_argument("--variants", metavar="A,B",
                       help="variants to measure (default: the four grad modes); any technique combines, e.g. "
                            "eval+inference_mode+bf16-autocast+compile (parts: bf16-autocast, fp16-autocast, "
                            "bf16-weights, compile, compile-max-autotune, compile-reduce-overhead, int8-dynamic, "
                            "channels_last, onnxruntime, threadsN)")
    bench.add_argument("--threads", type=_positive(int), help="intra-op threads (default: physical cores)")
    bench.add_argument("--budget-s", type=_positive(float), default=5.0,
                       help="timed seconds per variant and batch size at most (default: 5)")
    bench.add_argument("--target", type=_positive(float), default=0.02,
                       help="stop when each median's 95%% interval is within this fraction (default: 0.02)")
    bench.add_argument("--timeout-s", type=_positive(float), default=300.0,
                       help="a worker request (set-up, one round) taking longer fails that variant (default: 300)")
    bench.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    bench.add_argument("--seed", type=_seed, default=0, help="seed for weights and inputs (default: 0)")
    bench.add_argument("--replicas", type=_positive(int), default=3,
                       help="worker processes per variant (default: 3); processes differ, so intervals "
                            "cover that too")
    bench.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                       help="environment variable for every worker, e.g. MALLOC_TRIM_THRESHOLD_=1073741824 "
                            "(repeatable; recorded in the JSON)")
    bench.add_argument("--inline", action="store_true", help="run variants in this process (no isolation)")
    bench.add_argument("--json", metavar="FILE", help="write the JSON result, updated as results finish ('-' = stdout)")
    bench.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    add_generate_flags(bench, bench=True)
    bench.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from pitstop.bench.api import bench
    from pitstop.bench.settings import BenchSettings
    from pitstop.bench.variants.config import GRAD_MODES, parse_variant

    if args.generate is not None:
        return run_generate(args, bench_only=True)
    check_flags(args)
    if args.techniques is not None or args.tolerance is not None or args.allow_emulated:
        from pitstop.errors import UsageError

        raise UsageError("--techniques, --tolerance and --allow-emulated go with --generate on bench "
                         "(the grad-mode bench takes --variants)")
    output = Output(args.json, args.html)
    with flag_errors({"isolate": "--inline"}):
        variants = tuple(parse_variant(v) for v in (args.variants or "").split(",") if v.strip())
        settings = BenchSettings(
            batch_sizes=args.batch_sizes, variants=variants or GRAD_MODES, threads=args.threads,
            budget_s=args.budget_s, target=args.target, timeout_s=args.timeout_s, device=args.device,
            seed=args.seed, isolate=not args.inline, replicas=args.replicas,
            worker_env=tuple(sorted(_env_pairs(args.worker_env).items())))
        with _progress(output.console) as on_event:
            result = bench(args.model, args.input, settings=settings, json_path=output.result, on_event=on_event)
    output.finish(result.to_dict())
    return 130 if result.interrupted else 0
