"""Why bf16 autocast tops out near 1.75x on zoo:transformer on an AMD CPU: dropout's mask.

PyTorch draws a dropout mask with ``bernoulli_(p)``, which uses MKL's vectorised generator only
on Intel CPUs; elsewhere it draws one element at a time, on one thread, under the generator's
lock. That cost does not shrink with bf16 (or with compile, whose CPU kernels draw with a scalar
Philox per element), so it caps the step's speed-up. This script measures, side by side in one
interleaved run, the naive step (fp32, for-loop AdamW) and the bf16 autocast step of the zoo
transformer with its dropout (0.1) and without it (0.0), plus the share of each step's CPU time
that ``aten::bernoulli_`` takes (torch.profiler).

    python benchmarks/train_dropout.py             # zoo:transformer at batch 16, 2 threads
    python benchmarks/train_dropout.py --rounds 3  # fewer interleaved rounds (a quick look)
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from pitstop._env import cpu_name
from pitstop.models.zoo import SmallTransformer
from pitstop.stats import speedup


def make_step(dropout: float, bf16: bool, batch: int):
    """A training step (AdamW, for-loop) on a fresh seed-0 model; returns the step callable."""
    torch.manual_seed(0)
    model = SmallTransformer(dropout=dropout)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    tokens, target = torch.randint(0, 1000, (batch, 128)), torch.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(tokens), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def bernoulli_share(step) -> float:
    """The share of three steps' self CPU time spent in aten::bernoulli_."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    return sum(e.self_cpu_time_total for e in events if e.key == "aten::bernoulli_") / max(total, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds of 3 steps per variant")
    args = parser.parse_args()
    variants = {f"{name} dropout {p}": make_step(p, bf16, args.batch)
                for p in (0.1, 0.0) for name, bf16 in (("fp32", False), ("bf16", True))}
    for step in variants.values():  # warm-up
        step(), step()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):  # interleaved: drift hits every variant alike
        for name, step in variants.items():
            t = time.perf_counter()
            for _ in range(3):
                step()
            samples[name].append((time.perf_counter() - t) / 3)
    print(f"zoo:transformer, batch {args.batch}, {torch.get_num_threads()} threads, {cpu_name()}; "
          f"median of {args.rounds} interleaved rounds")
    print("| step | ms/step | bf16 speed-up over fp32 [95% CI] | aten::bernoulli_ share of CPU time |")
    print("|---|---|---|---|")
    for name, step in variants.items():
        ms = statistics.median(samples[name]) * 1e3
        if name.startswith("bf16"):
            fp32 = samples[name.replace("bf16", "fp32")]
            ratio = speedup(fp32, samples[name])
            gain = f"{ratio.median:.2f}x [{ratio.ci95[0]:.2f}-{ratio.ci95[1]:.2f}]"
        else:
            gain = "baseline"
        print(f"| {name} | {ms:.0f} | {gain} | {bernoulli_share(step):.0%} |", flush=True)


if __name__ == "__main__":
    main()
