"""The ``pitstop`` command line. Usage errors print one line and exit 2; never a traceback."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NoReturn

from pitstop import __version__
from pitstop.errors import PitstopError, UsageError

BENCH_EPILOG = """\
examples:
  pitstop bench zoo:mlp                                   the published MLP benchmark, measured here
  pitstop bench zoo:cnn --batch-sizes 1,32 --json out.json
  pitstop bench my_model.py:build --input 'float32[B,3,224,224]' --batch-sizes 1,8
  pitstop bench pkg.models:make --input 'int64[B,128]{0,30522}' --variants eval+no_grad,eval+inference_mode

model spec:  zoo:NAME (mlp, cnn, transformer) | path/to/file.py:factory | package.module:factory
             a factory returns an nn.Module or (module, example_inputs); it may take batch_size
input spec:  DTYPE[DIMS]{lo,hi}, B = batch size, several inputs joined with ';'

How it measures: each variant runs in its own worker process; after a warm-up, variants are
timed in interleaved rounds until every median's 95% interval is within --target or the
--budget-s of timed seconds per variant is spent. Speed-ups carry a bootstrap 95% interval;
"within noise" means the interval contains 1. Exit codes: 0 ok, 2 usage or input error,
130 interrupted (partial results printed and kept in --json)."""


OPTIMIZE_EPILOG = """\
examples:
  pitstop optimize zoo:cnn --batch-size 16
  pitstop optimize zoo:resnet50 --batch-size 8 --save out/        # needs pip install "pitstop[zoo]"
  pitstop optimize my_model.py:build --input 'int64[B,128]{0,30522}' --objective throughput --save out/
  pitstop optimize zoo:bert-base --latency-budget-ms 500 --batch-sizes 1,4,8,16 --json opt.json

How it searches (within --time-budget-s): from eval+inference_mode, each technique is probed
alone (bf16/fp16 autocast, bf16 weights, torch.compile modes, int8 dynamic quantization,
channels_last, thread counts, ONNX Runtime); those that cannot run here are skipped with the
reason, those that change the answers beyond --tolerance are rejected. Techniques faster beyond
noise or by 5% are combined, and compile is always tried on top of reduced precision (they
compose better than alone); on CPU, compile max-autotune is tried on the best compiled finalist
instead of alone. The finalists are measured interleaved in worker processes. The winner is
the fastest whose speed-up interval excludes 1 (a simpler candidate within noise and 3% is
preferred); otherwise eval+inference_mode stays.

Fidelity: every candidate vs the fp32 eager eval output: fp32 variants rel err <= 1e-4 (or as
close to an fp64 run as eager is), bf16/fp16/int8 rel err <= 2e-2 and argmax agreement >= 99%.
Objectives: latency (at --batch-size), throughput (most samples/s over --batch-sizes), and
--latency-budget-ms X (most samples/s with p90 latency per batch under X).
--save DIR writes recipe.py (rebuilds and applies it without pitstop), recipe.json and, for
ONNX Runtime, model.onnx. Exit codes: 0 ok, 2 usage or input error, 130 interrupted."""


SEARCH_AXES = ("precision", "compile", "quant", "layout", "threads", "runtime")  # = search.AXES (tested);
# spelled out here so building the parser (every command, `lint` included) never imports torch


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1,8,32, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 1,8,32, got {text!r}")
    return values


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (one sub-command per capability)."""
    parser = _Parser(prog="pitstop", description="Measure, diagnose and speed up PyTorch models on your hardware.")
    parser.add_argument("--version", action="version", version=f"pitstop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
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
    bench.add_argument("--seed", type=int, default=0, help="seed for weights and inputs (default: 0)")
    bench.add_argument("--replicas", type=_positive(int), default=3,
                       help="worker processes per variant (default: 3); processes differ, so intervals "
                            "cover that too")
    bench.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                       help="environment variable for every worker, e.g. MALLOC_TRIM_THRESHOLD_=1073741824 "
                            "(repeatable; recorded in the JSON)")
    bench.add_argument("--inline", action="store_true", help="run variants in this process (no isolation)")
    bench.add_argument("--json", metavar="FILE", help="write the JSON result, updated as results finish ('-' = stdout)")
    bench.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    bench.set_defaults(func=_bench)
    _add_optimize(sub)
    _add_doctor(sub)
    _add_lint(sub)
    _add_memory(sub)
    _add_data(sub)
    _add_compare(sub)
    _add_report(sub)
    return parser


def _add_compare(sub: Any) -> None:
    cmp = sub.add_parser("compare", help="compare two bench/optimize results: regression, improvement or noise",
                         description="Match variants between two `--json` results and say, from the raw samples, "
                                     "whether each got slower, faster or stayed within noise.",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  pitstop compare before.json after.json --threshold 0.05\n\n"
                                "Exit codes: 0 no regression beyond --threshold, 1 a regression (slower beyond "
                                "noise and by more than the threshold), 2 usage error.")
    cmp.add_argument("before", help="the reference result (JSON from pitstop bench/optimize --json)")
    cmp.add_argument("after", help="the result to check")
    cmp.add_argument("--threshold", type=float, default=0.05,
                     help="a regression must be slower by more than this fraction (default: 0.05)")
    cmp.add_argument("--json", metavar="FILE", help="write the comparison as JSON ('-' = stdout)")
    cmp.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    cmp.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    from pitstop.report.compare import compare
    from pitstop.report.json import check_writable, write_atomic

    if args.json and args.json != "-":
        check_writable(args.json)
    result = compare(args.before, args.after, args.threshold)
    if args.json == "-":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result)
        if args.json:
            write_atomic(args.json, result.to_dict())
    _html(args.html, result.to_dict())
    return 1 if result.regressions else 0


def _resolve(spec: str, what: str) -> Any:
    """The callable a ``file.py:name`` / ``package.module:name`` spec names; errors say ``what`` it is."""
    from pitstop.errors import PitstopError
    from pitstop.models.spec import parse_model_spec

    try:
        return parse_model_spec(spec).resolve()
    except PitstopError as exc:
        message = str(exc)
        if message.startswith("model "):
            message = f"{what} " + message[len("model "):]
        raise type(exc)(message.replace("a factory:", f"a {what} name:")) from None


def _html(path: str | None, doc: dict[str, Any]) -> None:
    """``--html FILE``: the self-contained report for the command's JSON document."""
    if path:
        from pitstop.report.pages import write_html

        write_html(path, doc)
        print(f"HTML report written to {path}", file=sys.stderr)


def _add_report(sub: Any) -> None:
    rep = sub.add_parser("report", help="turn a saved --json result into a self-contained HTML report",
                         description="Render any pitstop JSON result (bench, optimize, doctor, memory, compare) as "
                                     "one self-contained HTML file: inline CSS and SVG charts, no network.",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  pitstop report result.json --html result.html")
    rep.add_argument("result", help="a JSON file written with --json")
    rep.add_argument("--html", metavar="FILE", required=True, help="the HTML file to write")
    rep.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    path = Path(args.result)
    if not path.is_file():
        raise UsageError(f"{args.result!r} not found; give a JSON file written with --json")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{args.result!r} is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{args.result!r} is not a pitstop result")
    _html(args.html, doc)
    return 0


DATA_EPILOG = """\
examples:
  pitstop data my_data.py:make_dataset --batch-size 32
  pitstop data my_data.py:make_dataset --batch-size 64 --time-budget-s 120 --json loader.json

The factory returns a Dataset, or (dataset, collate_fn). Settings tried: num_workers 0 (the
default), 1, 2, 4, ... up to 2x the cores with persistent workers; prefetch_factor 4 and
non-persistent workers at the largest count; pin_memory=True too when CUDA is present. Each
round runs every setting for --batches batches, interleaved; batches/s counts the batches after
each pass's first (the first batch's time is shown apart). A setting is recommended only when
its speed-up interval over num_workers=0 excludes 1; among those, the fewest workers within
noise of the fastest. Otherwise: keep the defaults. A dataset that cannot be pickled is noted
(workers need the fork start method) and worker errors mark a setting failed.
Exit codes: 0 ok, 2 usage error (a factory that fails, a dataset that cannot be loaded)."""


def _add_data(sub: Any) -> None:
    data = sub.add_parser("data", help="measure DataLoader settings on your dataset and recommend the best",
                          description="Measure DataLoader settings (workers, persistence, prefetch, pinning) on "
                                      "your dataset, interleaved, and recommend the fastest that is faster "
                                      "beyond noise.",
                          epilog=DATA_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    data.add_argument("dataset", help="path/to/file.py:factory or package.module:factory (returns a Dataset)")
    data.add_argument("--batch-size", type=_positive(int), default=32, help="default: 32")
    data.add_argument("--time-budget-s", type=_positive(float), default=60.0, help="default: 60")
    data.add_argument("--max-workers", type=_positive(int), help="largest num_workers tried (default: 2x cores)")
    data.add_argument("--batches", type=_positive(int), default=20, help="batches per setting per round (default: 20)")
    data.add_argument("--json", metavar="FILE", help="write the JSON report ('-' = stdout)")
    data.set_defaults(func=_data)


def _data(args: argparse.Namespace) -> int:
    from pitstop._env import environment
    from pitstop.data import tune_loader
    from pitstop.errors import ModelLoadError, last_line
    from pitstop.report.json import check_writable, write_atomic

    if args.json and args.json != "-":
        check_writable(args.json)
    factory = _resolve(args.dataset, "dataset")
    try:
        made = factory()
    except Exception as exc:
        raise ModelLoadError(f"dataset {args.dataset}: the factory raised {last_line(exc)}") from exc
    dataset, collate = made if isinstance(made, tuple) else (made, None)
    if not hasattr(dataset, "__getitem__") and not hasattr(dataset, "__iter__"):
        raise UsageError(f"dataset {args.dataset}: the factory returned {type(dataset).__name__}, not a Dataset")
    console = _console(args.json == "-")
    with console.status("measuring loader settings") as status:
        choice = tune_loader(dataset, args.batch_size, collate, time_budget_s=args.time_budget_s,
                             max_workers=args.max_workers, batches_per_trial=args.batches,
                             on_event=lambda text: status.update(text))
    doc = choice.to_dict()
    doc["environment"], doc["dataset"], doc["batch_size"] = environment(), args.dataset, args.batch_size
    if args.json and args.json != "-":
        write_atomic(args.json, doc)
    _print(console, [choice.table(), choice.verdict, *choice.notes], lambda: json.dumps(doc, indent=2), args.json)
    return 0


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
    except (ValueError, StopIteration):
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
    mem.add_argument("--seed", type=int, default=0)
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
    grad.add_argument("--seed", type=int, default=0)
    grad.add_argument("--no-second-order", action="store_true", help="skip gradgradcheck")
    grad.add_argument("--json", metavar="FILE", help="write the result as JSON ('-' = stdout)")
    grad.set_defaults(func=_gradcheck)


def _memory(args: argparse.Namespace) -> int:
    from pitstop._env import environment
    from pitstop.memory import activation_report, checkpoint
    from pitstop.models.inputs import parse_input_spec
    from pitstop.models.spec import parse_model_spec
    from pitstop.report.json import check_writable, write_atomic

    if args.json and args.json != "-":
        check_writable(args.json)
    spec = parse_model_spec(args.model)
    model, inputs = spec.build(args.batch_size, seed=args.seed)
    if args.input or inputs is None:
        input_spec = parse_input_spec(args.input) if args.input else spec.default_input_spec()
        if input_spec is None:
            raise UsageError(f"model {args.model}: give --input (the factory returns no example inputs)")
        inputs = input_spec.make(args.batch_size, seed=args.seed)
    console = _console(args.json == "-")
    with console.status("measuring activations (one accounted step, then timed steps)"):
        report = activation_report(model, inputs, repeats=args.repeats)
    doc = report.to_dict()
    doc["environment"] = environment()
    doc["model"], doc["batch_size"] = args.model, args.batch_size
    items: list[Any] = [report.table(args.top)]
    code = 0
    if args.budget is not None:
        names = [n.strip() for n in args.candidates.split(",")] if args.candidates else None
        with console.status("choosing blocks and measuring before/after"):
            plan = checkpoint(model, inputs, budget=args.budget, candidates=names, repeats=args.repeats)
        doc["checkpoint"] = plan.to_dict()
        items.append(str(plan))
        code = 0 if plan.met else 1
    if args.json and args.json != "-":
        write_atomic(args.json, doc)
    _print(console, items, lambda: json.dumps(doc, indent=2), args.json)
    _html(args.html, doc)
    return code


def _gradcheck(args: argparse.Namespace) -> int:
    from pitstop.models.inputs import parse_input_spec
    from pitstop.numerics import verify_gradients

    fn = _resolve(args.function, "function")
    inputs = parse_input_spec(args.input).make(1, seed=args.seed)
    try:
        result = verify_gradients(fn, *inputs.args, second_order=not args.no_second_order)
    except ValueError as exc:
        raise UsageError(f"gradcheck {args.function}: {exc}") from None
    doc = {"function": args.function, "input": args.input, **result.to_dict()}
    if args.json == "-":
        print(json.dumps(doc, indent=2))
    else:
        print(result)
        if args.json:
            from pitstop.report.json import write_atomic

            write_atomic(args.json, doc)
    return 0 if result.ok else 1


LINT_EPILOG = """\
examples:
  pitstop lint src/ train.py                       path:line:col: PIT102 [*] message
  pitstop lint . --output-format sarif > lint.sarif
  pitstop lint . --fix                             apply safe fixes ([*]); --unsafe-fixes for [-] too
  pitstop lint . --diff                            show the fixes as a diff, change nothing
  pitstop lint . --select PIT1 --ignore PIT109     codes, prefixes or names (stale-gradients)
  pitstop explain PIT101                           what it is, why it hurts, what to write instead

Rules (static codes of the shared catalogue; `pitstop doctor` reports the same codes at run time):
PIT101 stale-gradients, PIT102 graph-kept-alive, PIT103 retain-graph-in-loop, PIT104
training-without-grad, PIT109 wrong-module-mode, PIT201 inference-with-grad, PIT202
prefer-inference-mode (info), PIT301 reentrant-checkpoint, PIT401 loader-in-main-process (info),
PIT501 unsafe-load, PIT601 gradcheck-low-precision, PIT602 unstable-logsumexp; PIT001 marks a file
that could not be parsed or decoded (the run goes on).
Suppress with `# noqa`, `# noqa: PIT101` or `# noqa: stale-gradients`; configure in pyproject.toml
under [tool.pitstop.lint] (select, ignore, per-file-ignores, exclude).
Exit codes: 0 no findings at or above --fail-on (default warning), 1 findings, 2 usage error."""


def _add_lint(sub: Any) -> None:
    from pitstop.lint.output import FORMATS

    lint = sub.add_parser("lint", help="find autograd mistakes in source code, with fixes",
                          description="Find the training-loop and inference mistakes of the PIT catalogue in "
                                      "Python source, statically, with safe and unsafe fixes.",
                          epilog=LINT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    lint.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    lint.add_argument("--output-format", choices=FORMATS, default="concise", help="default: concise")
    lint.add_argument("--select", action="append", default=[], metavar="CODES",
                      help="only these codes, prefixes or names (comma-separated; replaces the config's)")
    lint.add_argument("--ignore", action="append", default=[], metavar="CODES", help="leave these out")
    lint.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths")
    lint.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    lint.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff, apply unsafe fixes too")
    lint.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    lint.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default="warning",
                      help="exit 1 when a finding of this severity or worse remains (default: warning)")
    lint.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                      help="colour the concise/full output (auto: only on a terminal)")
    lint.set_defaults(func=_lint)
    explain = sub.add_parser("explain", help="explain a PIT code: what, why, example, fix",
                             description="Explain a PIT code (number or name); without one, list them all.")
    explain.add_argument("code", nargs="?", help="e.g. PIT101 or stale-gradients")
    explain.set_defaults(func=_explain)


def _lint(args: argparse.Namespace) -> int:
    from pitstop._env import environment
    from pitstop.codes import CODES, at_least
    from pitstop.lint import lint
    from pitstop.lint import output as out

    fmt = args.output_format
    result = lint(args.paths, select=args.select, ignore=args.ignore, exclude=args.exclude,
                  fix=args.fix and not args.diff, unsafe_fixes=args.unsafe_fixes, diff=args.diff,
                  keep_sources=fmt == "full")
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    if args.diff:
        sys.stdout.write("".join(result.diffs))
        fixes = sum(result.fixed.values())
        print(f"Would fix {fixes} finding(s) in {len(result.fixed)} file(s).", file=sys.stderr)
        return 1 if result.diffs else 0
    if fmt == "json":
        print(out.dumps(out.json_document(result.findings, result.files, result.lines, environment())))
    elif fmt == "sarif":
        from pathlib import Path

        print(out.dumps(out.sarif(result.findings, Path.cwd())))
    elif fmt == "github":
        for line in out.github(result.findings):
            print(line)
    else:
        lines = out.full(result.findings, result.sources, colour, args.unsafe_fixes) if fmt == "full" \
            else out.concise(result.findings, colour, args.unsafe_fixes)
        for line in lines:
            print(line)
        if result.fixed:
            print(f"Fixed {sum(result.fixed.values())} finding(s) in {len(result.fixed)} file(s).")
        print(out.summary(result.findings, result.files, args.unsafe_fixes))
    if args.fail_on == "never":
        return 0
    return 1 if any(at_least(CODES[d.code].severity, args.fail_on) for d in result.findings) else 0


def _explain(args: argparse.Namespace) -> int:
    from pitstop.codes import CODES
    from pitstop.lint.engine import explain

    if not args.code:
        for c in CODES.values():
            print(f"{c.code}  {c.name:<26} {c.severity:<8} {'lint' if 'S' in c.kinds else '    '} "
                  f"{'doctor' if 'R' in c.kinds else ''}")
        return 0
    print(explain(args.code))
    return 0


DOCTOR_EPILOG = """\
examples:
  pitstop doctor train.py --epochs 3              the script's own arguments follow its path
  pitstop doctor train.py --json report.json --fail-on error
  pitstop doctor --guard train.py                 skip optimizer steps whose gradients are NaN/Inf
  torchrun --nproc-per-node 2 -m pitstop doctor train.py    one merged report, from rank 0

What it watches (PyTorch's own hooks; nothing in the script changes): optimizer steps, gradients
as they accumulate, module forwards, backward calls and DataLoader waits. It reports PIT101
stale-gradients, PIT102 graph-kept-alive, PIT103 retain-graph-in-loop, PIT104
training-without-grad, PIT105 parameter-not-learning, PIT106 non-finite (first module / parameter),
PIT107 gradient-norm-anomaly, PIT108 dead-activations, PIT109 wrong-module-mode, PIT110
non-scalar-backward, PIT201 inference-with-grad and PIT402 input-stall (`pitstop explain CODE`).
Cost: a few percent (benchmarks/doctor_overhead.py); with CUDA, values stay on the device and are
read every --sync-every steps. A crash still prints the report; known autograd errors are
explained. Exit codes: the script's own when it fails, else 1 with findings at or above
--fail-on, 0 otherwise; 2 usage error."""


def _add_doctor(sub: Any) -> None:
    doc = sub.add_parser("doctor", help="run a training script and catch autograd mistakes as they happen",
                         description="Run an unmodified training script under the doctor and report autograd "
                                     "mistakes with the step, the module or parameter, and the fix.",
                         epilog=DOCTOR_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    doc.add_argument("script", help="the training script (run as __main__, like python SCRIPT)")
    doc.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    doc.add_argument("--json", metavar="FILE", help="write the JSON report ('-' = stdout)")
    doc.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (loss and gradient-norm "
                     "timelines, findings)")
    doc.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default="error",
                     help="exit 1 when a finding of this severity or worse is found (default: error)")
    doc.add_argument("--guard", action="store_true",
                     help="skip optimizer steps whose gradients are non-finite (reads them every step)")
    doc.add_argument("--sync-every", type=_positive(int), metavar="N",
                     help="steps between reads of device-side values (default: 1 on CPU, 50 with CUDA)")
    doc.add_argument("--select", metavar="CODES", default="", help="only these codes or prefixes, e.g. PIT10,PIT402")
    doc.add_argument("--ignore", metavar="CODES", default="", help="leave these codes or prefixes out")
    doc.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from pitstop.codes import at_least
    from pitstop.diagnose import Doctor
    from pitstop.diagnose.script import check_script, run_script
    from pitstop.report.json import check_writable

    check_script(args.script)
    if args.json and args.json != "-":
        check_writable(args.json)
    select = [c.strip() for c in args.select.split(",") if c.strip()]
    ignore = [c.strip() for c in args.ignore.split(",") if c.strip()]
    doctor = Doctor(guard=args.guard, sync_every=args.sync_every, select=select, ignore=ignore)
    report, code = run_script(args.script, list(args.args), doctor)
    if int(os.environ.get("RANK", "0")) != 0:
        return code
    console = _console(args.json == "-")
    if args.json and args.json != "-":
        from pitstop.report.json import write_atomic

        write_atomic(args.json, _doctor_document(report))
    _print(console, [report.table() if report.findings else report.summary(), *_doctor_notes(report)],
           lambda: json.dumps(_doctor_document(report), indent=2), args.json)
    _html(args.html, _doctor_document(report))
    if code:
        return code
    return 1 if args.fail_on != "never" and any(at_least(f.severity, args.fail_on) for f in report.findings) else 0


def _doctor_notes(report: Any) -> list[str]:
    notes = []
    if report.exit.get("status") not in ("ok", None):
        notes.append(f"the script {report.exit['status']}: {report.exit.get('error', report.exit.get('code', ''))}")
    notes += [f"internal warning (training went on): {n}" for n in report.internal]
    return notes


def _doctor_document(report: Any) -> dict[str, Any]:
    from pitstop._env import environment

    doc = report.to_dict()
    doc["environment"] = environment()
    return doc


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
    opt.add_argument("--techniques", metavar="A,B", default=",".join(AXES),
                     help=f"axes to search (default: all: {','.join(AXES)})")
    opt.add_argument("--tolerance", type=_positive(float), metavar="REL",
                     help="relative-error limit for every candidate (default: 1e-4 fp32, 2e-2 bf16/fp16/int8)")
    opt.add_argument("--threads", type=_positive(int), help="intra-op threads (default: physical cores)")
    opt.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    opt.add_argument("--seed", type=int, default=0, help="seed for weights and inputs (default: 0)")
    opt.add_argument("--replicas", type=_positive(int), default=2,
                     help="worker processes per finalist (default: 2)")
    opt.add_argument("--timeout-s", type=_positive(float), default=300.0,
                     help="a worker request (compile, export, a round) taking longer fails that candidate")
    opt.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                     help="environment variable for every worker (repeatable)")
    opt.add_argument("--save", metavar="DIR", help="write recipe.py, recipe.json (and model.onnx) to DIR")
    opt.add_argument("--json", metavar="FILE", help="write the JSON report, updated after each stage ('-' = stdout)")
    opt.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    opt.set_defaults(func=_optimize)


def _optimize(args: argparse.Namespace) -> int:
    from pitstop.measure.optimize_api import apply_report, run_search
    from pitstop.report.optimize import renderables

    to_stdout = args.json == "-"
    console = _console(to_stdout)
    if args.save:
        _check_dir(args.save)
    techniques = tuple(t.strip() for t in args.techniques.split(",") if t.strip())
    with _progress(console) as on_event:
        source, report, sink = run_search(
            args.model, args.input, objective=args.objective, batch_size=args.batch_size,
            batch_sizes=args.batch_sizes, latency_budget_ms=args.latency_budget_ms,
            time_budget_s=args.time_budget_s, techniques=techniques, tolerance=args.tolerance,
            threads=args.threads, device=args.device, seed=args.seed, replicas=args.replicas, isolate=True,
            timeout_s=args.timeout_s,
            json_path=None if to_stdout else args.json, worker_env=_env_pairs(args.worker_env), on_event=on_event)
        if args.save and not report.outcome.interrupted:
            on_event and on_event("phase", {"text": f"writing the recipe to {args.save}"})
            apply_report(source, report, args.save, sink)
    _print(console, renderables(report), report.to_json, args.json)
    _html(args.html, report.to_dict())
    return 130 if report.outcome.interrupted else 0


def _console(to_stdout: bool) -> Any:
    """The report's console: stderr when the JSON goes to stdout; wide in pipes and CI."""
    from rich.console import Console

    console = Console(stderr=to_stdout, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # pipes and CI: wide, so the tables stay readable
    return console


def _print(console: Any, items: list[Any], to_json: Any, json_arg: str | None) -> None:
    """The report, then the JSON on stdout (``--json -``) or a note of where it was written."""
    for item in items:
        console.print(item)
    if json_arg == "-":
        print(to_json())
    elif json_arg:
        console.print(f"JSON written to {json_arg}", style="dim")


def _check_dir(path: str) -> None:
    """--save must name a directory we can write (before minutes of measuring)."""
    from pathlib import Path

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"--save: {path!r} is a file; give a directory such as out/")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--save: cannot create {path!r} ({exc.strerror}); choose a writable directory") from None


def _bench(args: argparse.Namespace) -> int:
    from pitstop.measure.api import bench
    from pitstop.report.table import renderables

    to_stdout = args.json == "-"
    console = _console(to_stdout)
    variants = [v for v in (args.variants or "").split(",") if v.strip()] or None
    with _progress(console) as on_event:
        result = bench(
            args.model, args.input, batch_sizes=args.batch_sizes, variants=variants, threads=args.threads,
            budget_s=args.budget_s, target=args.target, timeout_s=args.timeout_s, device=args.device,
            seed=args.seed, isolate=not args.inline, replicas=args.replicas,
            worker_env=_env_pairs(args.worker_env),
            json_path=None if to_stdout else args.json, on_event=on_event,
        )
    _print(console, renderables(result), result.to_json, args.json)
    _html(args.html, result.to_dict())
    return 130 if result.interrupted else 0


def _env_pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--worker-env: expected KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value
    return pairs


class _progress:
    """A rich progress bar on a TTY; silent in pipes and CI."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not self.console.is_terminal:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                            console=self.console, transient=True)
        self.bar.start()
        self.task = self.bar.add_task("starting workers", total=1.0)
        return self.on_event

    def on_event(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "group":
            self.batch = info["batch_size"]

            self.bar.update(self.task, completed=0, description=f"b={self.batch}: starting workers")
        elif kind == "phase":
            self.bar.update(self.task, description=info["text"])
        elif kind == "round":
            live = [v for v in info["live"] if v.alive and v.row.samples_s]
            if live:
                self.bar.update(self.task, **_round_progress(self.batch, info["round"], live, info["policy"]))

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.stop()


def _round_progress(batch: int, round_no: int, live: list[Any], policy: Any) -> dict[str, Any]:
    """Bar position: each variant is done when precise enough or out of budget; the slowest counts."""
    from pitstop.measure.timer import precision

    widths = [precision(v.row.replica_samples_s) for v in live]
    done = min(max(v.spent_s / policy.budget_s, min(1.0, policy.target / max(w, 1e-9)))
               for v, w in zip(live, widths, strict=True))
    text = f"b={batch} round {round_no}: widest interval ±{max(widths):.1%} (target ±{policy.target:.0%})"
    return {"completed": done, "description": text}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pitstop`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except PitstopError as exc:
        print(f"pitstop: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pitstop: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `pitstop lint . | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug in pitstop: one line, the traceback on request
        if os.environ.get("PITSTOP_DEBUG"):
            raise
        print(f"pitstop: internal error: {type(exc).__name__}: {exc} (set PITSTOP_DEBUG=1 for the traceback "
              "and please report it)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
