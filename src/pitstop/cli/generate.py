"""``--generate`` on ``pitstop optimize`` (search, choose, recipe) and ``pitstop bench`` (the grid):
generation of a causal LM as the workload."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pitstop.cli._args import _env_pairs, _positive, flag_errors
from pitstop.cli._output import Output, _progress
from pitstop.errors import UsageError

GENERATE_HELP = """\
Generation (--generate N, a transformers causal LM or a model with its own generate(); zoo:
gpt2-tiny, llama-tiny, qwen2-tiny): each call generates exactly N greedy tokens after a
--prompt-len prompt (seeded random ids, or --prompts FILE: a JSON list of token-id lists); timed
whole, split into prefill (time to the first token) and per-token decode. Techniques
(--techniques): cache (static KV cache), compile (static cache + torch.compile; reduce-overhead
CUDA graphs on CUDA), precision (bf16/fp16 weights), attention (eager vs SDPA), quant (int8/int4
weight-only via torchao, dynamic int8 Linear), lookup (prompt-lookup decoding, batch 1),
threads. Lossless techniques must give the reference's greedy tokens exactly; lossy ones keep
the first --gate-tokens tokens of every prompt (default 16), a flip where the reference's top-1
margin is within the variant's own logit error excused (random zoo weights tie often: the report
counts those prompts), and logits before the first divergence within --tolerance (default 2e-2).
The winner runs at the other --batch-sizes too (tokens/s in total vs per sequence); --save DIR
writes recipe.py with apply(model) and generate(model, input_ids, max_new_tokens)."""

_NOT_WITH_GENERATE = {"input": "--input", "objective": "--objective", "latency_budget_ms": "--latency-budget-ms",
                      "metric": "--metric", "batch_size": "--batch-size", "variants": "--variants",
                      "inline": "--inline"}
_DEFAULTS = {"objective": "latency", "inline": False}


def add_generate_flags(parser: Any, *, bench: bool) -> None:
    """The flags ``--generate`` adds (on bench, ``--techniques`` and ``--allow-emulated`` too)."""
    group = parser.add_argument_group("generation (--generate)")
    group.add_argument("--generate", type=_positive(int), metavar="NEW_TOKENS",
                       help="measure generating NEW_TOKENS tokens with a causal LM instead of one forward")
    group.add_argument("--prompt-len", type=_positive(int), default=128, metavar="P",
                       help="prompt tokens before the new ones (default: 128)")
    group.add_argument("--prompts", metavar="FILE", help="your prompts: a JSON list of token-id lists (each >= P)")
    group.add_argument("--gate-tokens", type=int, metavar="N",
                       help="lossy variants must keep the first N new tokens of every prompt (default: min(16, NEW))")
    group.add_argument("--allow-emulated", action="store_true",
                       help="measure bf16/fp16 weights where this hardware only emulates them")
    if bench:
        group.add_argument("--techniques", metavar="A,B",
                           help="generation techniques to measure (default: all: cache,compile,precision,attention,"
                                "quant,threads,lookup)")
        group.add_argument("--tolerance", type=_positive(float), metavar="REL",
                           help="lossy variants' logits rel err before the first divergence (default: 2e-2)")


def check_flags(args: argparse.Namespace) -> None:
    """Flags of the one-forward workload given with --generate (or the other way round): one line, exit 2."""
    if args.generate is None:
        for flag in ("prompts", "gate_tokens"):
            if getattr(args, flag) is not None:
                raise UsageError(f"--{flag.replace('_', '-')} goes with --generate NEW_TOKENS")
        return
    for field, flag in _NOT_WITH_GENERATE.items():
        value = getattr(args, field, None)
        if value is not None and value != _DEFAULTS.get(field):
            raise UsageError(f"{flag} does not apply with --generate (a generation measures prompts of --prompt-len "
                             "token ids); leave it out")


def run_generate(args: argparse.Namespace, *, bench_only: bool) -> int:
    """Measure (and, for optimize, choose and save) generation; the exit code."""
    from pitstop.generate.api import run_generation
    from pitstop.generate.recipe import write_recipe
    from pitstop.generate.settings import GenerateSettings
    from pitstop.generate.techniques import AXES

    check_flags(args)
    output = Output(args.json, getattr(args, "html", None))
    save = getattr(args, "save", None)
    if save:
        from pitstop._io import check_folder

        with flag_errors():
            check_folder(save)
    techniques = tuple(t.strip() for t in (args.techniques or ",".join(AXES)).split(",") if t.strip())
    budget = args.time_budget_s if not bench_only else max(10.0, 6 * args.budget_s * (len(techniques) + 1))
    with flag_errors({"new_tokens": "--generate"}):
        settings = GenerateSettings(
            new_tokens=args.generate, prompt_len=args.prompt_len, batch_sizes=tuple(args.batch_sizes or (1,)),
            techniques=techniques, time_budget_s=budget, tolerance=args.tolerance or 2e-2,
            gate_tokens=args.gate_tokens, prompts=args.prompts, allow_emulated=args.allow_emulated,
            bench_only=bench_only, threads=args.threads, device=args.device, seed=args.seed,
            replicas=args.replicas if not bench_only else 1, timeout_s=args.timeout_s,
            worker_env=tuple(sorted(_env_pairs(args.worker_env).items()))).resolved()
        with _progress(output.console) as on_event:
            report = run_generation(args.model, settings, json_path=output.result, on_event=on_event)
            if save and not report.outcome.interrupted:
                on_event and on_event("phase", {"text": f"writing the recipe to {save}"})
                write_recipe(report, Path(save))
    output.finish(report.to_dict())
    return 130 if report.outcome.interrupted else 0
