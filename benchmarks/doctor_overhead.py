"""What does watching a training run cost? Step time with and without the doctor.

For zoo:transformer and zoo:cnn, one process runs training steps (forward, cross-entropy,
backward, AdamW step) in interleaved blocks: plain, under a Doctor in default mode, under a
Doctor with guard=True and under `torch.autograd.detect_anomaly()`, rotating the order each
round. Each Doctor is attached for its blocks and detached between them, so its step count (and
what it does per step) carries on as in one long run. Prints each mode's step time relative to
plain with a bootstrap 95% interval (pitstop's own statistics). Target: default mode <= 1.05x.

    python benchmarks/doctor_overhead.py [--rounds 12] [--steps 5] [--batch 16]
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings

import torch
from torch import nn

import pitstop
from pitstop.models.inputs import parse_input_spec
from pitstop.models.zoo import ZOO
from pitstop.stats import speedup

MODES = ("plain", "doctor", "doctor guard=True", "detect_anomaly")


@contextlib.contextmanager
def attached(doctor: pitstop.Doctor):
    doctor.attach()
    try:
        yield
    finally:
        doctor.detach()


def setup(name: str, batch: int) -> tuple[nn.Module, torch.optim.Optimizer, list[torch.Tensor], torch.Tensor]:
    torch.manual_seed(0)
    entry = ZOO[name]
    model = entry.build().train()
    inputs = parse_input_spec(entry.input_spec).make(batch, seed=0).tensors()
    with torch.no_grad():
        classes = model(*inputs).shape[-1]
    target = torch.randint(0, classes, (batch,))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), inputs, target


def step(model: nn.Module, opt: torch.optim.Optimizer, inputs: list[torch.Tensor], target: torch.Tensor) -> None:
    opt.zero_grad()
    nn.functional.cross_entropy(model(*inputs), target).backward()
    opt.step()


def measure(name: str, rounds: int, steps: int, batch: int) -> dict[str, list[float]]:
    model, opt, inputs, target = setup(name, batch)
    for _ in range(3):
        step(model, opt, inputs, target)  # warm-up
    times: dict[str, list[float]] = {m: [] for m in MODES}
    doctors = {"doctor": pitstop.Doctor(model, opt), "doctor guard=True": pitstop.Doctor(model, opt, guard=True)}
    contexts = {"plain": contextlib.nullcontext,
                "detect_anomaly": lambda: torch.autograd.detect_anomaly(check_nan=True),
                **{m: (lambda d=d: attached(d)) for m, d in doctors.items()}}
    order = list(MODES)
    for r in range(rounds):
        for mode in order[r % len(order):] + order[:r % len(order)]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # detect_anomaly warns that it is slow
                with contexts[mode]():
                    step(model, opt, inputs, target)  # the block's first step pays (re)attach costs: not timed
                    for _ in range(steps):
                        start = time.perf_counter()
                        step(model, opt, inputs, target)
                        times[mode].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per block")
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; step = forward + cross-entropy + backward "
          f"+ AdamW, batch {args.batch}; {args.rounds} interleaved rounds of {args.steps} timed steps per mode")
    for name in ("transformer", "cnn"):
        times = measure(name, args.rounds, args.steps, args.batch)
        plain = times["plain"]
        print(f"\nzoo:{name}: plain step {sorted(plain)[len(plain) // 2] * 1e3:.1f} ms (median of {len(plain)})")
        for mode in MODES:
            if mode == "plain":
                continue
            r = speedup(times[mode], plain)  # >1: the mode's steps take longer than plain ones
            verdict = "within noise" if r.verdict == "within noise" else f"{(r.median - 1):+.1%}"
            target = "  (target <= 1.05x)" if mode == "doctor" else ""
            print(f"  {mode:<18} {r.median:.3f}x [{r.ci95[0]:.3f}-{r.ci95[1]:.3f}] of plain step time, "
                  f"{verdict}{target}")


if __name__ == "__main__":
    main()
