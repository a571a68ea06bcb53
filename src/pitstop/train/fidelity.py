"""The training fidelity gate: does a variant still train the same as the fp32 eager step?

(a) Step-1 gradients against the fp32 eager reference: per-parameter cosine and relative norm
    error, reported. They are not the gate's last word: under bf16 a batch-norm parameter's
    gradient may point 5% off while training goes the same way (issue 16). With dropout, two fp32
    runs with different seeds already disagree; so the gate compares the variant's overall
    cosine with the cosine between two fp32 seeds, and rejects only a gradient that is far off
    (overall cosine below ``GRAD_FLOOR`` times the seed-to-seed one) or not finite.
(b) The trajectory: the loss after N steps must lie within the fp32 reference's spread over its
    seeds, widened by the stated tolerance: ``tolerance`` times the reference's loss decrease
    over the N steps (at least 1% of the final loss). A variant's runs are draws of the same random
    process as the reference's (another seed, or the same seed whose stream the variant moves), so
    they are judged as draws (``finals_verdict``): every run in the band, or their mean in it and no
    run further outside it than the reference's own range.
(c) GradScaler: more than ``MAX_SKIPPED`` of the steps skipped (overflowing gradients) = rejected.
Pure functions of tensors and numbers; the worker and the search call them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

GRAD_FLOOR = 0.9  # overall gradient cosine at least 0.9 x the seed-to-seed cosine of fp32 runs
MAX_SKIPPED = 0.01  # GradScaler may skip at most 1% of the steps
MIN_BAND = 0.01  # the trajectory band is widened by at least 1% of the reference's final loss


def gradient_report(candidate: Mapping[str, torch.Tensor | None], reference: Mapping[str, torch.Tensor]
                    ) -> dict[str, Any]:
    """Per-parameter cosine and relative norm error of ``candidate`` against ``reference``, the
    worst of each with its parameter's name, and the overall cosine (all gradients as one vector)."""
    cosines: dict[str, float] = {}
    errors: dict[str, float] = {}
    dot = na = nb = 0.0
    missing, nonfinite = [], []
    for name, ref in reference.items():
        got = candidate.get(name)
        if got is None:
            missing.append(name)
            continue
        a, b = got.detach().double().flatten(), ref.detach().double().flatten()
        if not bool(torch.isfinite(a).all()):
            nonfinite.append(name)
            continue
        dot, na, nb = dot + float(a @ b), na + float(a @ a), nb + float(b @ b)
        cosines[name] = _cosine(float(a @ b), float(a @ a), float(b @ b))
        errors[name] = float((a - b).norm() / b.norm()) if float(b.norm()) > 0 else float(a.norm() > 0)
    worst_cos = min(cosines, key=cosines.__getitem__, default=None)
    worst_err = max(errors, key=errors.__getitem__, default=None)
    return {"overall_cosine": _cosine(dot, na, nb) if cosines else 0.0,
            "min_cosine": cosines[worst_cos] if worst_cos else None, "min_cosine_param": worst_cos,
            "max_rel_err": errors[worst_err] if worst_err else None, "max_rel_err_param": worst_err,
            "missing": missing[:5], "nonfinite": nonfinite[:5], "parameters": len(reference)}


def _cosine(dot: float, na: float, nb: float) -> float:
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        return 0.0
    return dot / math.sqrt(na * nb)


def gradient_verdict(report: Mapping[str, Any], seed_cosine: float | None, fixed_floor: float | None = None,
                     floor_is: str = "") -> str | None:
    """Why the step-1 gradients fail the gate, or None. The floor is ``GRAD_FLOOR`` times the measured
    ``seed_cosine``, or ``fixed_floor`` where none is measured, whose origin ``floor_is`` states (in a
    script another seed draws other weights too: the two runs' gradients are not comparable)."""
    if report.get("nonfinite"):
        return f"step-1 gradients not finite in {', '.join(report['nonfinite'])}"
    if report.get("missing"):
        return f"no step-1 gradient for {', '.join(report['missing'])}"
    if seed_cosine is None:
        floor, why = (fixed_floor or 0.0), floor_is
    else:
        floor, why = GRAD_FLOOR * min(seed_cosine, 1.0), f"0.9 x the cosine between two fp32 seeds, {seed_cosine:.3f}"
    if report["overall_cosine"] < floor:
        return f"step-1 gradients point elsewhere: overall cosine {report['overall_cosine']:.3f} < {floor:.3f} ({why})"
    return None


def band(reference: Sequence[Sequence[float]], tolerance: float) -> dict[str, Any]:
    """The admitted range of the final loss: the reference seeds' final losses, widened by
    ``tolerance`` times their mean decrease over the trajectory (at least ``MIN_BAND`` of the final)."""
    finals = [run[-1] for run in reference]
    starts = [run[0] for run in reference]
    mean_final = sum(finals) / len(finals)
    decrease = sum(starts) / len(starts) - mean_final
    widen = max(tolerance * abs(decrease), MIN_BAND * abs(mean_final))
    return {"seeds": len(reference), "steps": len(reference[0]), "finals": finals,
            "low": min(finals) - widen, "high": max(finals) + widen, "widened_by": widen,
            "tolerance": tolerance, "reference_decrease": decrease}


def trajectory_verdict(losses: Sequence[Sequence[float]], admitted: Mapping[str, Any]) -> str | None:
    """Why the variant's final losses (one per run) fall outside the band, or None."""
    for run in losses:
        if len(run) < admitted["steps"]:
            return f"trajectory has {len(run)} steps, the reference {admitted['steps']}"
    return finals_verdict([run[admitted["steps"] - 1] for run in losses], admitted)


def outside_band(finals: Sequence[float], admitted: Mapping[str, Any]) -> list[float]:
    """The finals outside the band (a variant ``finals_verdict`` admits by their mean has some)."""
    return [f for f in finals if not admitted["low"] <= f <= admitted["high"]]


def finals_verdict(finals: Sequence[float], admitted: Mapping[str, Any]) -> str | None:
    """Why a variant's final losses, one per run, do not train the same as the band's reference, or None.

    The runs are draws: every run in the band passes; so do runs whose mean lies in the band while
    none lies further outside it than the reference finals' own range. A band of min-max over n
    reference runs holds each new draw of the same process with chance (n-1)/(n+1) only, so "every
    one of m runs inside" rejects an unchanged process often (n=4, m=3, no widening: the 7 draws'
    extremes are both reference runs with chance 4*3/(7*6), 29%); a variant that shifts the loss
    shifts the mean of its runs, which the band still catches. One run is judged as itself."""
    low, high = admitted["low"], admitted["high"]
    bad = next((f for f in finals if not math.isfinite(f)), None)
    if bad is not None:
        return f"loss after {admitted['steps']} steps {bad:.4g}: not finite"
    outside = outside_band(finals, admitted)
    if not outside:
        return None
    where = (f"the fp32 band [{low:.4g}, {high:.4g}] (seeds' finals "
             f"{', '.join(f'{f:.4g}' for f in admitted['finals'])}, widened by {admitted['widened_by']:.3g})")
    if len(finals) == 1:
        return f"loss after {admitted['steps']} steps {finals[0]:.4g} outside {where}"
    mean = sum(finals) / len(finals)
    spread = max(admitted["finals"]) - min(admitted["finals"])
    runs = f"runs' losses after {admitted['steps']} steps {', '.join(f'{f:.4g}' for f in finals)}"
    if not low <= mean <= high:
        return f"{runs}: their mean {mean:.4g} outside {where}"
    far = [f for f in outside if f < low - spread or f > high + spread]
    if far:
        return (f"{runs}: {far[0]:.4g} outside {where} by more than the seeds' own range {spread:.3g} "
                "(their mean is inside)")
    return None


def scaler_verdict(skipped: int, steps: int) -> str | None:
    """Why GradScaler skipped too many steps, or None."""
    if steps and skipped / steps > MAX_SKIPPED:
        return f"GradScaler skipped {skipped} of {steps} steps ({skipped / steps:.1%} > {MAX_SKIPPED:.0%})"
    return None
