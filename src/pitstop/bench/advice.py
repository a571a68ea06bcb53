"""One plain sentence of advice, drawn only from the measured verdicts."""

from __future__ import annotations

import math
from typing import Any, Protocol

Comparison = Any  # pitstop.engine.result.Comparison: variant, baseline, batch_size, ratio


class Compared(Protocol):
    """What the advice reads of a ``BenchResult`` (which calls it: a protocol, not an import)."""

    baseline: str
    rows: list[Any]

    @property
    def comparisons(self) -> list[Any]: ...

    def row(self, variant: str, batch_size: int) -> Any: ...

HOW = {
    "eval+inference_mode": "model.eval() with torch.inference_mode()",
    "eval+no_grad": "model.eval() with torch.no_grad()",
    "eval+grad": "model.eval() (autograd left on)",
    "train+grad": "the model as it is (train mode, autograd on)",
}


def _fmt(c: Comparison) -> str:
    lo, hi = c.ratio.ci95
    return f"{c.ratio.median:.2f}x at batch {c.batch_size} [95% CI {lo:.2f}-{hi:.2f}]"


MEANINGFUL = 1.05  # a "faster" verdict below 5% is reported as marginal, not as a recommendation


def advise(result: Compared) -> str:
    """Recommend the variant with the most significant, meaningful gains, with its evidence."""
    by_variant: dict[str, list[Comparison]] = {}
    for c in result.comparisons:
        row = result.row(c.variant, c.batch_size)
        if row is not None and row.status == "ok":
            by_variant.setdefault(c.variant, []).append(c)
    if not by_variant:
        names = sorted({r.variant for r in result.rows if r.measured})
        if len(names) == 1:
            return f"Only {names[0]} was measured; add variants (--variants) to compare."
        return "Nothing to recommend: no variant other than the baseline was measured successfully."
    def score(v: str) -> tuple[int, float]:
        wins = sum(c.ratio.verdict == "faster" and c.ratio.median >= MEANINGFUL for c in by_variant[v])
        return wins, sum(math.log(c.ratio.median) for c in by_variant[v]) / len(by_variant[v])

    best = max(by_variant, key=score)
    evidence = by_variant[best]
    faster = [c for c in evidence if c.ratio.verdict == "faster"]
    train_differs = any(r.note and r.variant == result.baseline for r in result.rows)
    why_eval = ("outputs differ in train mode" if train_differs
                else "it is correct whenever the model has dropout or batch-norm")
    if score(best)[0] == 0:
        marginal = [c for cs in by_variant.values() for c in cs if c.ratio.verdict == "faster"]
        gain = (f"; the only gains measured are marginal, under {MEANINGFUL - 1:.0%}: "
                f"{', '.join(f'{c.variant} {_fmt(c)}' for c in marginal)}" if marginal else "")
        return (f"Grad modes make no meaningful difference for this model here: every variant is within noise "
                f"of {result.baseline} or less than {MEANINGFUL - 1:.0%} faster{gain}. Still call model.eval() "
                f"for inference, because {why_eval}.")
    noise = [c for c in evidence if c.ratio.verdict != "faster"]
    tail = f"; at batch {', '.join(str(c.batch_size) for c in noise)} it is within noise" if noise else ""
    return (f"Run inference as {HOW.get(best, best)}: measured faster than {result.baseline} by "
            f"{', '.join(map(_fmt, faster))}{tail}.")
