"""The published checkpointing trade-off ("about 60% less memory for about 30% more compute"),
measured at a CPU-feasible size: 12 pre-norm transformer blocks, d_model 512, 8 heads, FFN 4x.

Three configurations of the same model and batch: no checkpointing, every block checkpointed,
and `pitstop.memory.checkpoint(budget=0.5)`. For each: activation bytes saved for backward
(exact, saved_tensors_hooks) and forward+backward step time, the three timed in interleaved
rounds in one process; ratios vs no checkpointing with bootstrap 95% intervals.
Targets: every-block checkpointing cuts activations by >= 50%; the 50% budget policy meets its
budget with less time cost than checkpointing every block.

    python benchmarks/checkpointing.py [--batch 4] [--seq 256] [--rounds 6]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from pitstop.memory import activation_report, checkpoint, uncheckpoint
from pitstop.memory.checkpointing import wrap
from pitstop.stats import speedup


class Encoder(nn.Module):
    def __init__(self, blocks: int = 12, d: int = 512, heads: int = 8) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True,
                                                               norm_first=True) for _ in range(blocks))
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.norm(x)


def loss_fn(out: torch.Tensor) -> torch.Tensor:
    return out.float().pow(2).mean()


def step(model: nn.Module, x: torch.Tensor) -> float:
    start = time.perf_counter()
    loss_fn(model(x)).backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def configure(model: Encoder, which: str, chosen: list[str]) -> None:
    uncheckpoint(model)
    modules = dict(model.named_modules())
    names = [f"blocks.{i}" for i in range(len(model.blocks))] if which == "every block" else \
        chosen if which == "budget 50%" else []
    for name in names:
        wrap(modules[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Encoder().train()
    x = torch.randn(args.batch, args.seq, 512)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; 12 blocks, d_model 512, 8 heads, FFN 2048, "
          f"batch {args.batch}, seq {args.seq}; {args.rounds} interleaved rounds of 2 timed steps per configuration")
    plan = checkpoint(model, x, budget=0.5, loss_fn=loss_fn, repeats=2)
    print(f"budget policy chose {len(plan.chosen)} of 12 blocks: {', '.join(plan.chosen)}")
    configs = ["none", "every block", "budget 50%"]
    memory = {}
    for which in configs:
        configure(model, which, plan.chosen)
        memory[which] = activation_report(model, x, loss_fn=loss_fn, repeats=1, peak=False).total_bytes
    times: dict[str, list[float]] = {c: [] for c in configs}
    for r in range(args.rounds):
        for which in configs[r % 3:] + configs[:r % 3]:
            configure(model, which, plan.chosen)
            step(model, x)  # settle after switching
            times[which] += [step(model, x), step(model, x)]
    base_mem, base = memory["none"], times["none"]
    budget = int(base_mem * 0.5)
    print(f"\n{'configuration':<14} {'activations':>12} {'vs none':>9} {'step ms':>9}  step time vs none [95% CI]")
    for which in configs:
        t = sorted(times[which])
        r = speedup(times[which], base)  # > 1: slower than no checkpointing
        mem_cut = 1 - memory[which] / base_mem
        cost = "" if which == "none" else f"{r.median:.3f}x [{r.ci95[0]:.3f}-{r.ci95[1]:.3f}] ({r.median - 1:+.0%})"
        print(f"{which:<14} {memory[which] / 2**20:9.1f} MiB {-mem_cut:+9.0%} {t[len(t) // 2] * 1e3:9.0f}  {cost}")
    every = speedup(times["every block"], base).median
    policy = speedup(times["budget 50%"], base).median
    print(f"\nevery block: activations -{1 - memory['every block'] / base_mem:.0%} (target >= 50%; published ~60%), "
          f"time +{every - 1:.0%} (published ~30%)")
    print(f"budget 50%: {memory['budget 50%'] / 2**20:.1f} MiB vs budget {budget / 2**20:.1f} MiB "
          f"({'met' if memory['budget 50%'] <= budget else 'NOT met'}), time +{policy - 1:.0%} vs +{every - 1:.0%} "
          f"for every block ({'less' if policy < every else 'NOT less'})")


if __name__ == "__main__":
    main()
