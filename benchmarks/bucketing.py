"""Length-bucketed batching vs random batching on a long-tailed length distribution.

20,000 sequence lengths drawn from a log-normal (median ~55 tokens, long tail, capped at 512).
Prints the share of padded tokens with random batches and with `LengthBucketSampler`, and the
measured epoch time of zoo:transformer's training step (forward, cross-entropy, backward, AdamW)
with both on a 2,000-sample subset of the same distribution (sequences truncated to the model's
128 positions), the two interleaved batch by batch in one run. Target: >= 70% fewer padded tokens.

    python benchmarks/bucketing.py [--samples 20000] [--timed 2000] [--batch 32]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import BatchSampler, RandomSampler

from pitstop.data import LengthBucketSampler, padding_waste
from pitstop.models.zoo import ZOO
from pitstop.stats import speedup


def lognormal_lengths(n: int, cap: int, seed: int = 0) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    draws = torch.exp(4.0 + 0.8 * torch.randn(n, generator=g))
    return draws.clamp(1, cap).long().tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--timed", type=int, default=2_000, help="samples in the timed epoch")
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    lengths = lognormal_lengths(args.samples, 512)
    g = torch.Generator().manual_seed(0)
    random_batches = list(BatchSampler(RandomSampler(range(len(lengths)), generator=g), args.batch, False))
    bucketed = list(LengthBucketSampler(lengths, args.batch, seed=0))
    before, after = padding_waste(lengths, random_batches), padding_waste(lengths, bucketed)
    s = sorted(lengths)
    print(f"{args.samples} lengths, log-normal: median {s[len(s) // 2]}, p90 {s[int(0.9 * len(s))]}, max {s[-1]}; "
          f"batch {args.batch}")
    print(f"padded tokens: random batches {before:.1%}, LengthBucketSampler {after:.1%} -> "
          f"{1 - after / before:.0%} fewer (target >= 70%)")

    short = [min(x, 128) for x in lognormal_lengths(args.timed, 512, seed=1)]
    torch.manual_seed(0)
    model = ZOO["transformer"].build().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(1)
    plans = {"random": list(BatchSampler(RandomSampler(range(len(short)), generator=g), args.batch, False)),
             "bucketed": list(LengthBucketSampler(short, args.batch, seed=1))}
    tokens = torch.randint(0, 1000, (len(short), 128))

    def step(batch: list[int]) -> float:
        width = max(short[i] for i in batch)
        x = tokens[batch, :width]  # padded to the batch's longest sequence
        y = torch.randint(0, 10, (len(batch),))
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        return time.perf_counter() - start

    step(plans["random"][0])  # warm-up
    times: dict[str, list[float]] = {k: [] for k in plans}
    for i in range(max(len(p) for p in plans.values())):  # interleaved: one batch of each, alternating first
        for name in (("random", "bucketed") if i % 2 == 0 else ("bucketed", "random")):
            if i < len(plans[name]):
                times[name].append(step(plans[name][i]))
    epoch = {k: sum(v) for k, v in times.items()}
    r = speedup(times["random"], times["bucketed"])  # per-batch medians, bootstrap interval
    print(f"zoo:transformer epoch over {len(short)} samples (<= 128 tokens): random {epoch['random']:.1f} s, "
          f"bucketed {epoch['bucketed']:.1f} s -> {epoch['random'] / epoch['bucketed']:.2f}x faster per epoch "
          f"(per-batch median {r.median:.2f}x [{r.ci95[0]:.2f}-{r.ci95[1]:.2f}]); padded tokens "
          f"{padding_waste(short, plans['random']):.1%} vs {padding_waste(short, plans['bucketed']):.1%}")


if __name__ == "__main__":
    main()
