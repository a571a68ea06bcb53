"""Does `pitstop profile` name the planted bottleneck, and what does it cost outside its window?

1. Verdicts. Every script in tests/profile/scripts/ (a small training loop with one planted
   bottleneck, named on its docstring's first line "planted: CAUSE", or "clean") runs in its own
   process under `python -m pitstop profile --json -`; the verdict's first cause is compared with
   the planted one (a script whose docstring says "needs cuda" or "needs bf16" is skipped on
   hardware without it). Goal: at least 9 of 10 planted scripts named first, no cause other than
   compute-bound first on the clean scripts. (compute-fp32 needs hardware with native bf16.)
2. Overhead. One process trains an MLP (about 10 ms a step on one thread) in interleaved blocks:
   plain steps, then steps under a fresh Profiler once its drill-down window has passed (the
   steps a long run spends outside the window), the order alternating each round. Prints the
   profiled/plain ratio of median step times with a bootstrap 95% interval. Goal: <= 1.03.

    python benchmarks/profile_planted.py [--steps 20] [--rounds 10] [--block 15] [--skip-verdicts]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

import pitstop
from pitstop.stats import speedup

SCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "profile" / "scripts"


def planted(path: Path) -> tuple[str, str | None]:
    """The cause planted in a script ("clean" for none) and the hardware it needs to show (``cuda``,
    ``bf16``), from its docstring's first line: "planted: CAUSE[, needs HARDWARE]."."""
    first = path.read_text().split('"""')[1].split(".")[0]
    if not first.startswith("planted:"):
        return "clean", None
    cause, _, needs = first.split(":", 1)[1].partition(", needs ")
    return cause.strip(), needs.strip() or None


def available(needs: str | None) -> bool:
    if needs == "cuda":
        return torch.cuda.is_available()
    if needs == "bf16":
        from pitstop._env import cpu_flags

        return any(f in cpu_flags() for f in ("avx512_bf16", "amx_bf16"))
    return True


def profile_script(path: Path, steps: int) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-m", "pitstop", "profile", "--json", "-", str(path), "--steps", str(steps)],
                         capture_output=True, text=True, env=env, timeout=600, cwd=path.parent)
    if out.returncode:
        raise RuntimeError(f"{path.name}: exit {out.returncode}: {out.stderr[-500:]}")
    text = out.stdout
    return json.loads(text[text.index("{\n"):])  # the script's own prints come first


def verdicts(steps: int) -> None:
    hits = planted_n = clean_ok = clean_n = 0
    print(f"{'script':<24} {'planted':<24} {'first cause':<24} {'share':>6} {'step ms':>8}")
    for path in sorted(SCRIPTS.glob("[!_]*.py")):
        want, needs = planted(path)
        if not available(needs):
            print(f"{path.name:<24} {want:<24} (skipped: needs {needs})")
            continue
        doc = profile_script(path, steps)
        first = doc["verdict"][0] if doc["verdict"] else {"cause": "-", "share": 0}
        if want == "clean":
            clean_n += 1
            clean_ok += first["cause"] in ("-", "compute-bound")
        else:
            planted_n += 1
            hits += first["cause"] == want
        ok = first["cause"] == want or (want == "clean" and first["cause"] in ("-", "compute-bound"))
        mark = "ok" if ok else "MISS"
        print(f"{path.name:<24} {want:<24} {first['cause']:<24} {first['share']:>6.0%} "
              f"{doc['step_ms']['median']:>8.3g}  {mark}")
    print(f"\nplanted cause named first: {hits} of {planted_n}; clean scripts without a false verdict: "
          f"{clean_ok} of {clean_n}")


def overhead(rounds: int, block: int) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(128, 512), torch.randint(0, 10, (128,))

    def steps(n: int) -> list[float]:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            times.append(time.perf_counter() - start)
        return times

    steps(10)  # warm-up
    plain: list[float] = []
    profiled: list[float] = []
    for r in range(rounds):
        for mode in (("plain", "profiled") if r % 2 == 0 else ("profiled", "plain")):
            if mode == "plain":
                plain += steps(block)
                continue
            prof = pitstop.profile(wait=1, warmup=1, active=1).attach()
            steps(4)  # steps 1-4: the first step and the drill-down window (left out of its statistics too)
            profiled += steps(block)
            prof.detach()
    ratio = speedup(profiled, plain)  # > 1: the profiled steps are slower
    lo, hi = ratio.ci95
    verdict = "within noise" if lo <= 1 <= hi else "profiled slower" if lo > 1 else "profiled faster: noise"
    print(f"\noverhead outside the profiled window: profiled/plain median step = {ratio.median:.3f} "
          f"[95% CI {lo:.3f}-{hi:.3f}] ({verdict}); plain median "
          f"{sorted(plain)[len(plain) // 2] * 1e3:.2f} ms over {len(plain)} steps, {rounds} interleaved rounds; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def cost_per_step(rounds: int) -> None:
    """The profiler's own cost in microseconds per step, on a step small enough to show it (a tiny
    MLP): the fastest of ``rounds`` interleaved blocks per mode, the least disturbed by other load."""
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)

    def block(n: int = 300) -> float:
        start = time.perf_counter()
        for _ in range(n):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        return (time.perf_counter() - start) / n * 1e6

    best = {"plain": float("inf"), "profiled": float("inf")}
    for _ in range(rounds):
        best["plain"] = min(best["plain"], block())
        prof = pitstop.profile(wait=1, warmup=1, active=1).attach()
        block(4)
        best["profiled"] = min(best["profiled"], block())
        prof.detach()
    print(f"cost per step outside the window (tiny MLP, fastest of {rounds} blocks): "
          f"{best['profiled'] - best['plain']:.0f} us ({best['plain']:.0f} -> {best['profiled']:.0f} us/step)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=15)
    parser.add_argument("--skip-verdicts", action="store_true")
    args = parser.parse_args()
    if not args.skip_verdicts:
        verdicts(args.steps)
    overhead(args.rounds, args.block)
    cost_per_step(args.rounds)


if __name__ == "__main__":
    main()
