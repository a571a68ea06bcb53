"""Grad-mode ratios for zoo:mlp and zoo:cnn, measured twice back to back.

Prints each variant's speed-up over train+grad with its 95% interval for run 1 and run 2, and
whether the two runs agree (their intervals overlap). Usage:

    python benchmarks/grad_modes.py [--budget-s 5] [--json results.json]
"""

from __future__ import annotations

import argparse
import json

import pitstop
from pitstop.bench.result import BenchResult

MODELS = {"zoo:mlp": [1, 16, 256], "zoo:cnn": [1, 16]}


def ratios(result: BenchResult) -> dict[tuple[int, str], tuple[float, float, float, str]]:
    return {(c.batch_size, c.variant): (c.ratio.median, *c.ratio.ci95, c.ratio.verdict) for c in result.comparisons}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-s", type=float, default=5.0)
    parser.add_argument("--json", help="also write every figure here")
    args = parser.parse_args()
    report = {}
    for model, sizes in MODELS.items():
        runs = [pitstop.bench(model, batch_sizes=sizes, budget_s=args.budget_s) for _ in range(2)]
        r1, r2 = (ratios(r) for r in runs)
        print(f"\n{model}  ({runs[0].environment['threads']} threads, {runs[0].environment['cpu']})")
        print(f"{'batch':>5}  {'variant':<20} {'run 1 speed-up [95% CI]':<28} {'run 2 speed-up [95% CI]':<28} runs")
        rows = []
        for key in r1:
            a, b = r1[key], r2.get(key)
            if b is None:
                continue
            agree = a[1] <= b[2] and b[1] <= a[2]
            print(f"{key[0]:>5}  {key[1]:<20} {a[0]:.3f}x [{a[1]:.3f}-{a[2]:.3f}] {a[3]:<12} "
                  f"{b[0]:.3f}x [{b[1]:.3f}-{b[2]:.3f}] {b[3]:<12} {'agree' if agree else 'DISAGREE'}")
            rows.append({"batch_size": key[0], "variant": key[1], "run1": a[:3], "run2": b[:3], "agree": agree})
        for bs in sizes:
            saved = [f"{r.variant} {r.activation_bytes / 2**20:.2f} MiB" for r in runs[0].rows_at(bs)
                     if r.activation_bytes is not None]
            print(f"  b={bs}: saved for backward: {', '.join(saved)}")
        print("  advice:", runs[0].advice())
        report[model] = {"rows": rows, "runs": [r.to_dict() for r in runs]}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
