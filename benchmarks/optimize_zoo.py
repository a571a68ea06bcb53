"""Does `pitstop optimize` find (nearly) the best variant, fast enough?

For each model: run the search (default 300 s budget), then, in one interleaved bench run, measure
the chosen variant next to train+grad, eval+no_grad and a full grid of technique combinations
(precision x compile x channels_last x int8, plus ONNX Runtime). Prints the chosen variant's
speed-up per sample over train+grad and eval+no_grad, the best fidelity-passing grid speed-up,
how close the choice is to it, and the search time. The grid's best is the fastest of ~25 noisy
medians, a pick biased toward a lucky measurement, so a second interleaved run (two processes per
variant) re-measures the chosen variant next to the grid's top three; "within 5%" is judged there.

Targets (2-core CPU with avx512_bf16): resnet50 chosen >= 3.0x over train+grad; chosen within 5%
of the grid's best for both models; search <= 300 s per model.

    python benchmarks/optimize_zoo.py [zoo:resnet50 zoo:bert-base] [--budget-s 2]   # needs the zoo extra
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import pitstop
from pitstop.bench.variants.config import VariantConfig


def grid(four_d: bool) -> list[VariantConfig]:
    """Every combination of the CPU techniques on top of eval+inference_mode, and ONNX Runtime."""
    configs = []
    for precision, compile_, layout, quant in itertools.product(
            ("fp32", "bf16-autocast", "bf16-weights"), (None, "default"),
            (None, "channels_last") if four_d else (None,), (None, "int8-dynamic")):
        configs.append(VariantConfig("eval", "inference_mode", precision, compile_, quant, layout))
    return [*configs, VariantConfig("eval", "inference_mode", runtime="onnxruntime")]


def run(spec: str, batch: int, budget_s: float, search_s: float) -> dict:
    started = time.monotonic()
    fast = pitstop.optimize(spec, batch_size=batch, time_budget_s=search_s)
    search_took = time.monotonic() - started
    chosen = fast.config
    four_d = spec.endswith("resnet50")
    variants = [VariantConfig("train", "grad"), VariantConfig("eval", "no_grad"), chosen,
                *[c for c in grid(four_d) if c != chosen]]
    result = pitstop.bench(spec, batch_sizes=[batch], variants=variants, budget_s=budget_s, replicas=1,
                           timeout_s=600)
    rows = {r.variant: r for r in result.rows}
    passing = [r for r in rows.values() if r.status == "ok" and r.variant not in ("train+grad", "eval+no_grad")]
    fastest = sorted(passing, key=lambda r: r.per_sample.median)
    best = fastest[0]
    ratio = result.comparison
    # The grid's best is the fastest of some 25 noisy medians: picking the minimum favours a lucky
    # measurement (the winner's curse), so the gap it shows is biased against the chosen variant.
    # A second interleaved run, independent of that pick, re-measures the chosen variant next to
    # the grid's top three, in two worker processes each; the target is judged on it.
    top = [r.variant for r in fastest[:3]]
    recheck = pitstop.bench(spec, batch_sizes=[batch], variants=list(dict.fromkeys([chosen.name, *top])),
                            budget_s=2 * budget_s, replicas=2, timeout_s=600)
    again = {v: recheck.comparison(chosen.name, batch, v).ratio for v in top if v != chosen.name}
    return {
        "model": spec, "batch": batch, "chosen": chosen.name, "search_s": search_took,
        "chosen_vs_train_grad": ratio(chosen.name, batch, "train+grad").ratio,
        "chosen_vs_no_grad": ratio(chosen.name, batch, "eval+no_grad").ratio,
        "best": best.variant, "best_vs_train_grad": ratio(best.variant, batch, "train+grad").ratio,
        "chosen_vs_best": ratio(chosen.name, batch, best.variant).ratio if best.variant != chosen.name else None,
        "chosen_vs_best_again": again.get(best.variant), "chosen_vs_top_again": again,
        "grid": {r.variant: (r.status, r.per_sample.median if r.per_sample else None) for r in rows.values()},
        "report": str(fast.report),
    }


def show(r: dict) -> None:
    def fmt(ratio):
        return f"{ratio.median:.2f}x [{ratio.ci95[0]:.2f}-{ratio.ci95[1]:.2f}]"

    print(f"\n== {r['model']} batch {r['batch']}: search took {r['search_s']:.0f} s (target <= 300 s)")
    print(f"chosen: {r['chosen']}")
    print(f"  per-sample speed-up vs train+grad:   {fmt(r['chosen_vs_train_grad'])}")
    print(f"  per-sample speed-up vs eval+no_grad: {fmt(r['chosen_vs_no_grad'])}")
    print(f"grid best (fidelity passing): {r['best']}: {fmt(r['best_vs_train_grad'])} vs train+grad")
    gap = r["chosen_vs_best"]
    if gap is None:
        print("  chosen IS the grid best")
    else:
        print(f"  chosen vs grid best, in the grid run (biased: the best of ~25 noisy medians): {fmt(gap)}")
        print(f"  chosen vs grid best, re-measured in a second run: {fmt(r['chosen_vs_best_again'])} "
              "(target >= 0.95x)")
    for name, vs in r["chosen_vs_top_again"].items():
        print(f"    re-measured: chosen vs {name}: {fmt(vs)}")
    for name, (status, ms) in sorted(r["grid"].items(), key=lambda kv: kv[1][1] or 1e9):
        print(f"    {name:62s} {status:9s} {'-' if ms is None else f'{ms:.1f} ms/sample'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=["zoo:resnet50", "zoo:bert-base"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--budget-s", type=float, default=2.0, help="timed seconds per grid variant")
    parser.add_argument("--search-s", type=float, default=300.0, help="the search's time budget")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    results = []
    for spec in args.models:
        r = run(spec, args.batch, args.budget_s, args.search_s)
        show(r)
        results.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: (vars(v) if hasattr(v, "ci95") else v) for k, v in r.items()} for r in results], f,
                      indent=2, default=str)


if __name__ == "__main__":
    main()
