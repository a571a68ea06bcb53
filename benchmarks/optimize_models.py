"""Does `pitstop optimize` choose as well as a hand grid, and the same way twice, on models it was
not tuned on?

Six small models written here (a GRU text classifier, a CNN, a hand-written transformer encoder,
an embedding-heavy recommender, an MLP, and a model with data-dependent control flow). For each:
two back-to-back `pitstop.optimize` runs, then ONE interleaved bench run that measures both runs'
choices next to the hand grid of issue 20 (eval+no_grad, bf16 autocast, int8 dynamic,
compile+bf16), every variant gated on fidelity the same way. Printed per model: the choices, the
best fidelity-passing hand variant, choice / hand-best (speed-up per sample, >= 0.95 is the
target) and run 1 vs run 2 (within 5% is the target).

    python benchmarks/optimize_models.py [--quick] [--threads N] [--models gru_text,conv] [--json out.json]

--quick: 30 s searches, 1 s of timing per variant (about 3 min per model on 2 busy cores);
the default is 120 s searches and 3 s per variant.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from torch import nn

HERE = os.path.abspath(__file__)
HAND = ("eval+no_grad", "eval+no_grad+bf16-autocast", "eval+no_grad+int8-dynamic",
        "eval+no_grad+bf16-autocast+compile")


# -- the models (factories take batch_size, as `file.py:factory` specs) -------------------------

class GRUText(nn.Module):
    """Token ids -> 4 classes: embedding, a 2-layer GRU, a linear head on the last state."""

    def __init__(self, vocab: int = 5000, dim: int = 64, hidden: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        states, _ = self.gru(self.embed(tokens))  # (B, T, hidden)
        return self.head(states[:, -1])


def gru_text(batch_size: int = 8):
    return GRUText(), torch.randint(0, 5000, (batch_size, 32))


def conv(batch_size: int = 8):
    """A small VGG-like CNN on 32x32 images, 10 classes."""
    def block(i: int, o: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2))

    model = nn.Sequential(block(3, 16), block(16, 32), block(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(64, 10))
    return model, torch.randn(batch_size, 3, 32, 32)


class Encoder(nn.Module):
    """A transformer encoder written by hand (no nn.MultiheadAttention): 2 layers, 4 heads."""

    def __init__(self, vocab: int = 8000, dim: int = 128, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim)
        self.qkv = nn.ModuleList(nn.Linear(dim, 3 * dim) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.ff = nn.ModuleList(nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
                                for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(2 * layers))
        self.head = nn.Linear(dim, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)  # (B, T, C)
        b, t, c = x.shape
        for i, (qkv, out, ff) in enumerate(zip(self.qkv, self.out, self.ff, strict=True)):
            q, k, v = qkv(self.norms[2 * i](x)).split(c, dim=-1)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))  # (B, H, T, D)
            weights = (q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5).softmax(-1)  # (B, H, T, T)
            x = x + out((weights @ v).transpose(1, 2).reshape(b, t, c))
            x = x + ff(self.norms[2 * i + 1](x))
        return self.head(x.mean(1))


def attention(batch_size: int = 8):
    return Encoder(), torch.randint(0, 8000, (batch_size, 64))


class Recommender(nn.Module):
    """Embedding-heavy: 8 sparse features (bags of ids from 100k-row tables) + a dense MLP."""

    def __init__(self, rows: int = 100_000, dim: int = 64, features: int = 8) -> None:
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(features))
        self.mlp = nn.Sequential(nn.Linear(features * dim + 16, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, ids: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        pooled = [table(ids[:, i]) for i, table in enumerate(self.tables)]  # each (B, dim)
        return self.mlp(torch.cat([*pooled, dense], dim=1))


def embedding(batch_size: int = 8):
    return Recommender(), (torch.randint(0, 100_000, (batch_size, 8, 20)), torch.randn(batch_size, 16))


def mlp(batch_size: int = 8):
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    return model, torch.randn(batch_size, 512)


class Adaptive(nn.Module):
    """Data-dependent control flow: refinement steps repeat while the update is large (at most 4),
    and a branch picks one of two heads by the sign of the batch mean."""

    def __init__(self, dim: int = 256) -> None:
        super().__init__()
        self.inp, self.step = nn.Linear(64, dim), nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.pos, self.neg = nn.Linear(dim, 10), nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for _ in range(4):
            update = self.step(h)
            h = h + update
            if update.abs().mean() < 0.1:
                break
        return self.pos(h) if h.mean() > 0 else self.neg(h)


def dynamic(batch_size: int = 8):
    return Adaptive(), torch.randn(batch_size, 64)


MODELS = ("gru_text", "conv", "attention", "embedding", "mlp", "dynamic")


# -- the comparison -------------------------------------------------------------------------------

def run(name: str, batch: int, search_s: float, budget_s: float, replicas: int, threads: int | None = None) -> dict:
    import pitstop

    spec = f"{HERE}:{name}"
    choices, took = [], []
    for _ in range(2):  # two back-to-back searches: do they agree?
        started = time.monotonic()
        fast = pitstop.optimize(spec, batch_size=batch, time_budget_s=search_s, replicas=replicas, threads=threads)
        took.append(time.monotonic() - started)
        choices.append(fast.config.name)
    variants = list(dict.fromkeys([*HAND, *choices]))
    result = pitstop.bench(spec, batch_sizes=[batch], variants=variants, budget_s=budget_s, replicas=replicas,
                           threads=threads)
    rows = {r.variant: r for r in result.rows}
    passing = [rows[v] for v in HAND if rows[v].status == "ok" and rows[v].per_sample]
    best = min(passing, key=lambda r: r.per_sample.median).variant  # type: ignore[union-attr]

    def ratio(a: str, b: str) -> list[float] | None:  # speed-up of a over b, median and 95% interval
        if a == b:
            return [1.0, 1.0, 1.0]
        c = result.comparison(a, batch, b)
        return [c.ratio.median, *c.ratio.ci95] if c else None

    return {"model": name, "batch": batch, "choices": choices, "search_s": took, "hand_best": best,
            "choice_vs_hand_best": [ratio(c, best) for c in choices], "run1_vs_run2": ratio(choices[0], choices[1]),
            "hand": {v: {"status": rows[v].status, "reason": rows[v].reason,
                         "ms_per_sample": rows[v].per_sample.median if rows[v].per_sample else None}
                     for v in variants}}


def table(results: list[dict]) -> str:
    """The README's markdown table."""
    def fmt(r: list[float] | None) -> str:
        return f"{r[0]:.2f} [{r[1]:.2f}-{r[2]:.2f}]" if r else "-"

    lines = ["| model | choice (run 1 / run 2) | best hand variant | choice / hand best | run 1 / run 2 |",
             "|---|---|---|---|---|"]
    for r in results:
        short = [c.replace("eval+inference_mode", "im").replace("eval+no_grad", "ng") for c in r["choices"]]
        lines.append(f"| {r['model']} | {' / '.join(short)} | {r['hand_best'].replace('eval+no_grad', 'ng')} | "
                     f"{' / '.join(fmt(x) for x in r['choice_vs_hand_best'])} | {fmt(r['run1_vs_run2'])} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="30 s searches, 1 s of timing per variant")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {','.join(MODELS)}")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, help="threads of every variant (default: the physical cores)")
    parser.add_argument("--json", help="write every result here")
    args = parser.parse_args()
    search_s, budget_s, replicas = (30.0, 1.0, 1) if args.quick else (120.0, 3.0, 2)
    results = []
    for name in args.models.split(","):
        started = time.monotonic()
        results.append(run(name.strip(), args.batch, search_s, budget_s, replicas, args.threads))
        r = results[-1]
        print(f"{name}: {r['choices']} hand best {r['hand_best']} choice/hand {r['choice_vs_hand_best']} "
              f"run1/run2 {r['run1_vs_run2']} ({time.monotonic() - started:.0f} s; load {os.getloadavg()[0]:.1f})",
              flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    print(table(results))


if __name__ == "__main__":
    main()
