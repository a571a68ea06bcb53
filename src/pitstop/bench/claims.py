"""Published claims checked against what was measured here (the catalogue: docs/claims.md, made
from this module).

A claim says "variant V takes X% less time than baseline B"; measured here, the same cut is
``1 - 1/speedup`` with the speed-up's bootstrap interval carried through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol


class Measured(Protocol):
    """What the checks read of a group's rows (a ``BenchResult``, an optimize stage): a protocol,
    not an import."""

    @property
    def batch_sizes(self) -> list[int]: ...

    def comparison(self, variant: str, batch_size: int, baseline: str | None = None) -> Any: ...

Holds = Literal["consistent", "does not hold here", "inconclusive", "not measured"]


@dataclass(frozen=True)
class Claim:
    """A published time cut (``low``..``high``, fractions) of ``variant`` over ``baseline``."""

    text: str
    source: str
    variant: str
    baseline: str
    low: float
    high: float
    batch_size: int | None = None  # the batch the claim was measured at, if stated


@dataclass(frozen=True)
class ClaimCheck:
    """A claim next to the cut measured here at one batch size."""

    claim: Claim
    batch_size: int
    measured: float | None
    ci95: tuple[float, float] | None
    verdict: Holds


_GENERIC = (
    Claim("no_grad makes CPU inference 10-25% faster", "blog folklore, 2024-26 articles",
          "eval+no_grad", "eval+grad", 0.10, 0.25),
    Claim("inference_mode is 10-20% faster than no_grad", "blog folklore, 2024-26 articles",
          "eval+inference_mode", "eval+no_grad", 0.10, 0.20),
)

CLAIMS: dict[str, tuple[Claim, ...]] = {
    "zoo:mlp": (
        Claim("no_grad 25.6% faster than default", "published MLP benchmark, hardware unstated",
              "eval+no_grad", "train+grad", 0.256, 0.256, 256),
        Claim("inference_mode 34.4% faster than default", "published MLP benchmark, hardware unstated",
              "eval+inference_mode", "train+grad", 0.344, 0.344, 256),
    ),
    "zoo:resnet50": (
        Claim("no_grad 22.2% faster (Xeon CPU)", "blog table, 2024-26 article",
              "eval+no_grad", "eval+grad", 0.222, 0.222),
    ),
    "zoo:bert-base": (
        Claim("no_grad 21.8% faster (Xeon CPU)", "blog table, 2024-26 article",
              "eval+no_grad", "eval+grad", 0.218, 0.218),
    ),
}


def claims_for(key: str | None) -> tuple[Claim, ...]:
    """The model's own published claims, then the generic ones."""
    return CLAIMS.get(key or "", ()) + _GENERIC


def check_claims(result: Measured, key: str | None = None) -> list[ClaimCheck]:
    """Every applicable claim (the model ``key``'s own, by default the result's ``claims_key``,
    then the generic ones) at every measured batch size (the claim's own batch if stated)."""
    checks = []
    for claim in claims_for(key if key is not None else getattr(result, "claims_key", None)):
        sizes = [claim.batch_size] if claim.batch_size in result.batch_sizes else result.batch_sizes
        for bs in sizes:
            checks.append(_check(result, claim, bs))
    return [c for c in checks if c.verdict != "not measured"]


def _check(result: Measured, claim: Claim, batch_size: int) -> ClaimCheck:
    comparison = result.comparison(claim.variant, batch_size, baseline=claim.baseline)
    if comparison is None:
        return ClaimCheck(claim, batch_size, None, None, "not measured")
    ratio = comparison.ratio
    cut = 1 - 1 / ratio.median
    lo, hi = 1 - 1 / ratio.ci95[0], 1 - 1 / ratio.ci95[1]
    if hi < claim.low or lo > claim.high:
        verdict: Holds = "does not hold here"  # the interval excludes the claimed cut
    elif lo <= 0 <= hi:
        verdict = "inconclusive"  # no measurable effect, yet too noisy to exclude the claim
    else:
        verdict = "consistent"
    return ClaimCheck(claim, batch_size, cut, (lo, hi), verdict)
