"""Why bf16 autocast tops out near 1.75x on zoo:transformer on an AMD CPU: dropout's mask.

PyTorch draws a dropout mask with ``bernoulli_(p)``, which uses MKL's vectorised generator only
on Intel CPUs; elsewhere it draws one element at a time, on one thread, under the generator's
lock. That cost does not shrink with bf16 (or with compile, whose CPU kernels draw with a scalar
Philox per element), so it caps the step's speed-up. This script measures, side by side in one
interleaved run, the naive step (fp32, for-loop AdamW) and the bf16 autocast step of the zoo
transformer with its dropout (0.1) and without it (0.0), plus the share of each step's CPU time
that ``aten::bernoulli_`` takes (torch.profiler), and the operators that take most of it.

``--model lightning`` does the same for the model of Lightning's basics/transformer.py example
(``lightning.pytorch.demos.Transformer``: nn.Transformer 2+2 layers, d=200, dropout 0.2, a
33,278-word vocabulary; batch 20 x 35 tokens, ``log_softmax`` + ``nll_loss``, SGD lr 0.1 with the
script's gradient clipping at 0.25), the one script of ``benchmarks/train_scripts.py`` whose bf16
patch stays under 1.3x on this CPU (needs the ``lightning`` extra).

    python benchmarks/train_dropout.py                   # zoo:transformer at batch 16, 2 threads
    python benchmarks/train_dropout.py --rounds 3        # fewer interleaved rounds (a quick look)
    python benchmarks/train_dropout.py --model lightning # Lightning's transformer example's step
    python benchmarks/train_dropout.py --model lightning --vocab 7627  # as train_scripts.py runs it
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from pitstop._env import cpu_name
from pitstop.models.zoo import SmallTransformer
from pitstop.stats import speedup


def make_step(dropout: float, bf16: bool, batch: int, which: str = "zoo", vocab: int = 33278):
    """A training step (AdamW, for-loop) on a fresh seed-0 model; returns the step callable."""
    torch.manual_seed(0)
    if which == "lightning":
        return _lightning_step(dropout, bf16, batch, vocab)
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


def _lightning_step(dropout: float, bf16: bool, batch: int, vocab: int):
    """The step Lightning runs for basics/transformer.py: its training_step, clip 0.25, SGD."""
    from lightning.pytorch.demos import Transformer

    model = Transformer(vocab_size=vocab, dropout=dropout)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens, target = torch.randint(0, vocab, (batch, 35)), torch.randint(0, vocab, (batch, 35))

    def step() -> None:
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            loss = nn.functional.nll_loss(model(tokens, target), target.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def op_shares(step) -> tuple[float, str]:
    """Over three steps' self CPU time: aten::bernoulli_'s share, and the three largest operators."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            step()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = max(sum(e.self_cpu_time_total for e in events), 1e-9)
    mask = sum(e.self_cpu_time_total for e in events if e.key == "aten::bernoulli_") / total
    top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:3]
    return mask, ", ".join(f"{e.key.removeprefix('aten::')} {e.self_cpu_time_total / total:.0%}" for e in top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("zoo", "lightning"), default="zoo",
                        help="zoo:transformer (dropout 0.1), or Lightning's transformer example (0.2)")
    parser.add_argument("--vocab", type=int, default=33278,
                        help="lightning: the vocabulary (WikiText-2's 33,278; train_scripts.py's text: 7,627)")
    parser.add_argument("--batch", type=int, default=None, help="16 for zoo, 20 for lightning (the script's)")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds of 3 steps per variant")
    args = parser.parse_args()
    batch = args.batch or (20 if args.model == "lightning" else 16)
    rate = 0.2 if args.model == "lightning" else 0.1
    variants = {f"{name} dropout {p}": make_step(p, bf16, batch, args.model, args.vocab)
                for p in (rate, 0.0) for name, bf16 in (("fp32", False), ("bf16", True))}
    for step in variants.values():  # warm-up
        step(), step()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):  # interleaved: drift hits every variant alike
        for name, step in variants.items():
            t = time.perf_counter()
            for _ in range(3):
                step()
            samples[name].append((time.perf_counter() - t) / 3)
    title = f"Lightning's transformer example (vocabulary {args.vocab})" if args.model == "lightning" \
        else "zoo:transformer"
    print(f"{title}, batch {batch}, {torch.get_num_threads()} threads, {cpu_name()}; "
          f"median of {args.rounds} interleaved rounds; load average {os.getloadavg()[0]:.2f}")
    print("| step | ms/step | bf16 speed-up over fp32 [95% CI] | aten::bernoulli_ share of CPU time | top operators |")
    print("|---|---|---|---|---|")
    for name, step in variants.items():
        ms = statistics.median(samples[name]) * 1e3
        if name.startswith("bf16"):
            fp32 = samples[name.replace("bf16", "fp32")]
            ratio = speedup(fp32, samples[name])
            gain = f"{ratio.median:.2f}x [{ratio.ci95[0]:.2f}-{ratio.ci95[1]:.2f}]"
        else:
            gain = "baseline"
        mask, top = op_shares(step)
        print(f"| {name} | {ms:.0f} | {gain} | {mask:.0%} | {top} |", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
