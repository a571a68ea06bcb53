"""Known autograd errors, explained under their PIT code when a watched run crashes."""

from __future__ import annotations

from pitstop.doctor.findings import Findings
from pitstop.hooks.sites import crash_site, format_exception_line

KNOWN: list[tuple[str, str, str]] = [
    ("does not require grad and does not have a grad_fn", "PIT104",
     "backward() ran on a tensor computed with autograd off: the forward ran under torch.no_grad() / "
     "torch.inference_mode() (or every parameter is frozen, or the loss was .detach()ed)"),
    ("backward through the graph a second time", "PIT103",
     "a second backward ran over a graph whose saved tensors were already freed: usually state carried from "
     "the previous step without .detach() (an RNN hidden state, a running total of losses), so this step's "
     "graph reaches into the last one; detach the carried state (retain_graph=True only hides it, and the "
     "graph keeps growing)"),
    ("modified by an inplace operation", "PIT103",
     "a tensor saved for backward was changed in place before backward ran: often the graph of an earlier "
     "step is kept (retain_graph=True, or state carried without .detach()) while optimizer.step() updates the "
     "weights in place; otherwise an in-place op (x += ..., relu_(inplace=True)) on a value backward needs"),
    ("grad can be implicitly created only for scalar outputs", "PIT110",
     "backward() on a tensor with more than one element: reduce the loss first (loss.mean() / loss.sum()) or "
     "pass gradient= of the same shape"),
]


def explain(findings: Findings, exc: BaseException) -> dict[str, str]:
    """The crash record (``error``, ``where``, ``code`` when known); a known autograd error also
    becomes a finding of its code (unless that code was already found, with its own location)."""
    crash = {"error": format_exception_line(exc), "where": crash_site(exc)}
    text = str(exc)
    for needle, code, meaning in KNOWN:
        if needle in text:
            crash["code"] = code
            if code not in findings.codes():
                findings.found(code, crash["where"] or "the script", f"the run crashed: {meaning}")
            break
    return crash
