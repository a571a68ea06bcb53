"""Does `pitstop optimize --generate` find (nearly) the fastest way to generate, with the same tokens?

For each causal LM (random weights, transformers configs, nothing downloaded): run the generation
search, then, in one interleaved group (2 worker processes per variant, gated on the same
tokens), measure the chosen variant next to the hand grid the anchors recommend: the default
`generate` (dynamic cache, eager), static cache, static cache + compile, + bf16 weights where bf16
is native, int8 weight-only (torchao). Prints, per model and in ratios of whole generate calls
(tokens/s): the chosen variant over the default, the best hand variant that passed the gate over
the default, and chosen over that best.

Targets (issue 46): chosen within 5% of the best gate-passing hand variant (>= 0.95); chosen >= 2x
the default at batch 1 where the hand grid reaches 2x.

    python benchmarks/generate.py [zoo:gpt2-tiny zoo:llama-tiny zoo:qwen2-tiny] [--search-s 240] [--grid-s 150]
        [--device cuda] [--techniques cache,compile,precision,quant,attention,threads]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from pitstop._env import native_bf16
from pitstop.generate.api import measure_configs, optimize_generation
from pitstop.generate.settings import GenerateSettings
from pitstop.generate.techniques import AXES, REFERENCE, GenConfig
from pitstop.stats import speedup_groups

MODELS = ["zoo:gpt2-tiny", "zoo:llama-tiny", "zoo:qwen2-tiny"]


def hand_grid(device: str) -> list[GenConfig]:
    """What a user following the transformers guide and gpt-fast would try by hand."""
    grid = [REFERENCE, GenConfig(cache="static"), GenConfig(cache="static", compile="default")]
    if device == "cuda":
        grid.append(GenConfig(cache="static", compile="reduce-overhead"))
    if native_bf16(device):
        grid += [GenConfig(dtype="bf16"), GenConfig(dtype="bf16", cache="static", compile="default")]
    return [*grid, GenConfig(quant="int8-weight-only")]


def run(spec: str, new: int, prompt: int, search_s: float, grid_s: float, device: str = "cpu",
        techniques: tuple[str, ...] = AXES) -> dict:
    load0 = os.getloadavg()[0]
    started = time.monotonic()
    report = optimize_generation(spec, new_tokens=new, prompt_len=prompt, time_budget_s=search_s, device=device,
                                 techniques=techniques)
    took = time.monotonic() - started
    chosen = report.outcome.winner
    configs = list(dict.fromkeys([*hand_grid(device), chosen]))
    settings = GenerateSettings(new_tokens=new, prompt_len=prompt, time_budget_s=grid_s, replicas=2,
                                device=device).resolved()
    rows = {r.gen_config: r for r in measure_configs(spec, configs, settings)}
    default = rows[REFERENCE]

    def over(a, b) -> float | None:
        if not (a.measured and b.measured):
            return None
        return speedup_groups(b.replica_samples_s, a.replica_samples_s).median

    passing = [c for c in hand_grid(device) if rows[c].status == "ok" and rows[c].measured]
    best = max(passing, key=lambda c: over(rows[c], default) or 0.0)
    out = {"model": spec, "chosen": chosen.name, "search_s": took, "load_start": load0,
           "load_end": os.getloadavg()[0], "chosen_vs_default": over(rows[chosen], default),
           "best_hand": best.name, "best_hand_vs_default": over(rows[best], default),
           "chosen_vs_best_hand": over(rows[chosen], rows[best]),
           "grid": {c.name: {"status": rows[c].status, "reason": rows[c].reason,
                             "vs_default": over(rows[c], default),
                             "tokens_per_s": new / (sorted(rows[c].samples_s)[len(rows[c].samples_s) // 2])
                             if rows[c].samples_s else None} for c in configs}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--search-s", type=float, default=240.0)
    parser.add_argument("--grid-s", type=float, default=150.0)
    parser.add_argument("--techniques", default=",".join(AXES),
                        help="the search's techniques (e.g. without lookup: the hand grid's own techniques)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (benchmarks/gpu.sh runs it on a GPU)")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    from pitstop._env import cpu_name

    print(f"CPU {cpu_name()}, {os.cpu_count()} cores, device {args.device}, bf16 native: {native_bf16(args.device)}; "
          f"generate {args.new_tokens} tokens after {args.prompt_len}, batch 1")
    results = []
    for spec in args.models:
        r = run(spec, args.new_tokens, args.prompt_len, args.search_s, args.grid_s, args.device,
                tuple(args.techniques.split(",")))
        results.append(r)
        for name, g in r["grid"].items():
            ratio = f"{g['vs_default']:5.2f}x" if g["vs_default"] else "    - "
            tps = f"{g['tokens_per_s']:7.1f} tok/s" if g["tokens_per_s"] else "      - tok/s"
            print(f"  {spec:16s} {name:40s} {g['status']:8s} {ratio}  {tps}  {g['reason'] or ''}")
        reach = (r["best_hand_vs_default"] or 0) >= 2.0
        print(f"{spec}: chosen {r['chosen']} {r['chosen_vs_default']:.2f}x the default; best hand {r['best_hand']} "
              f"{r['best_hand_vs_default']:.2f}x; chosen / best hand {r['chosen_vs_best_hand']:.2f} "
              f"(target >= 0.95: {'met' if r['chosen_vs_best_hand'] >= 0.95 else 'NOT met'}); "
              f">= 2x target {'applies' if reach else 'does not apply (the hand grid does not reach 2x)'}; "
              f"search {r['search_s']:.0f} s; load {r['load_start']:.2f} -> {r['load_end']:.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
