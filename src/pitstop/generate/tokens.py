"""Fidelity on tokens: a variant's greedy continuation against the reference's, margin-aware.

Once two greedy continuations differ, their prefixes differ and nothing after is comparable; so
each prompt is compared up to its first divergence. There the prefixes are still the same, so the
two logit vectors are comparable too: a flip is a *near tie* when the reference's top-1 margin is
within twice the variant's own logit error at that position (numeric noise chose, not the model).

Random-weight models (the zoo) have near-uniform logits and small margins, so their lossy
variants often diverge at near ties: the gate then judges them on the tokens up to that point and
the logits' relative error before it, and the note says how many prompts that concerned."""

from __future__ import annotations

from typing import Any

import torch


def compare_tokens(ref_seq: torch.Tensor, ref_logits: list[torch.Tensor], seq: torch.Tensor,
                   logits: list[torch.Tensor], prompt_len: int) -> dict[str, Any]:
    """Compare two greedy generations of the same prompts: ``*_seq`` (prompts, P + N) token ids as
    ``generate`` returns them, ``*_logits`` the raw logits of each new token (N tensors of
    (prompts, vocab)). Returns plain numbers (the JSON's ``fidelity``)."""
    new_ref, new = ref_seq[:, prompt_len:], seq[:, prompt_len:]
    have_logits = bool(ref_logits) and bool(logits)  # a model's own generate() gives tokens only
    n = min(new_ref.shape[1], new.shape[1], *((len(ref_logits), len(logits)) if have_logits else ()))
    rows = new_ref.shape[0]
    first: list[int | None] = []
    margins: list[float | None] = []
    noise: list[float | None] = []
    diff_sq, ref_sq = 0.0, 0.0
    for i in range(rows):
        differ = (new_ref[i, :n] != new[i, :n]).nonzero()
        d = int(differ[0]) if len(differ) else None
        first.append(d)
        upto = 0 if not have_logits else n if d is None else d + 1  # comparable up to the first divergence
        for t in range(upto):
            a, b = ref_logits[t][i].double(), logits[t][i].double()
            diff_sq += float(((a - b) ** 2).sum())
            ref_sq += float((a**2).sum())
        if d is None or not have_logits:
            margins.append(None)
            noise.append(None)
        else:
            a, b = ref_logits[d][i].double(), logits[d][i].double()
            top = a.topk(2).values
            margins.append(float(top[0] - top[1]))
            noise.append(2.0 * float((a - b).abs().max()))
    agree = float((new_ref[:, :n] == new[:, :n]).float().mean()) if n else 1.0
    near = [None if d is None or margins[i] is None else margins[i] <= noise[i]  # type: ignore[operator]
            for i, d in enumerate(first)]
    rel_err = None if not have_logits else (diff_sq / ref_sq) ** 0.5 if ref_sq > 0 else 0.0
    return {"prompts": rows, "new_tokens": n, "identical": sum(d is None for d in first),
            "agreement": agree, "first_divergence": first, "margin_at_divergence": margins,
            "noise_at_divergence": noise, "near_tie": near, "logits": have_logits, "rel_err": rel_err}


def judge(fid: dict[str, Any], lossless: bool, gate_tokens: int, tolerance: float) -> tuple[str | None, str | None]:
    """``(reason to reject, note)``: a lossless variant must give the reference's tokens exactly;
    a lossy one must keep the first ``gate_tokens`` tokens of every prompt (a divergence at a near
    tie excused) and its logits before the divergence within ``tolerance`` (relative error)."""
    if "error" in fid:
        return f"fidelity failed: {fid['error']}", None
    diverged = [(i, d) for i, d in enumerate(fid["first_divergence"]) if d is not None]
    if lossless:
        if not diverged:
            return None, None
        i, d = diverged[0]
        margin = fid["margin_at_divergence"][i]
        where = (f": reference margin {margin:.2g}, the variant's logit error {fid['noise_at_divergence'][i] / 2:.2g}"
                 if margin is not None else "")
        return (f"greedy tokens differ from the reference's on {len(diverged)} of {fid['prompts']} prompt(s) "
                f"(prompt {i} at new token {d}{where}); a lossless technique must give the same tokens"), None
    for i, d in diverged:
        if d < gate_tokens and not fid["near_tie"][i]:
            if fid["margin_at_divergence"][i] is None:
                return (f"prompt {i} diverges at new token {d} (< {gate_tokens}, the gate); the model's own "
                        "generate() gives no logits, so no near tie can excuse it"), None
            return (f"prompt {i} diverges at new token {d} (< {gate_tokens}, the gate) where the reference's top-1 "
                    f"margin {fid['margin_at_divergence'][i]:.2g} is beyond the variant's numeric noise "
                    f"{fid['noise_at_divergence'][i]:.2g}"), None
    if fid["rel_err"] is not None and fid["rel_err"] > tolerance:
        return (f"logits before the first divergence differ by rel err {fid['rel_err']:.2e} > tolerance "
                f"{tolerance:.0e}"), None
    ties = [(i, d) for i, d in diverged if fid["near_tie"][i] and d < gate_tokens]
    note = None
    if ties:
        note = (f"{len(ties)} of {fid['prompts']} prompt(s) diverged at a near tie (reference margin within the "
                f"variant's numeric noise; first at new token {min(d for _, d in ties)}): judged on the tokens "
                "before it and the logits' rel err")
    return None, note
