"""``pitstop memory``'s and ``pitstop data``'s terminal reports from their JSON documents: the
activation table per module (and the checkpoint plan), the DataLoader trials."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes

Doc = dict[str, Any]


def memory_table(doc: Doc) -> Table:
    """One row per module (the ``top`` largest subtrees when the run asked for them)."""
    rows, total, top = doc.get("modules", []), doc.get("activation_bytes") or 0, doc.get("top")
    if top is not None:
        rows = sorted(rows, key=lambda r: -r["subtree_bytes"])[:top]
    title = (f"activations saved for backward: {fmt_bytes(total)} (parameters "
             f"{fmt_bytes(doc.get('parameter_saved_bytes'))} and inputs {fmt_bytes(doc.get('input_saved_bytes'))} "
             f"apart); forward+backward {doc.get('step_ms') or 0:.1f} ms; peak of a training step "
             f"{fmt_bytes(doc.get('peak_step_bytes'))} ({doc.get('peak_how', '')})")
    table = Table(title=Text(title, style="table.title"), title_justify="left")
    for col in ("module", "type", "saved here", "saved in subtree", "share", "forward ms", "self ms"):
        table.add_column(col, justify="left" if col in ("module", "type") else "right")
    for r in rows:
        share = r["subtree_bytes"] / total if total else 0.0
        table.add_row(Text("  " * r["depth"] + r["module"]), Text(r["type"]), fmt_bytes(r["saved_bytes"]),
                      fmt_bytes(r["subtree_bytes"]), f"{share:.0%}", f"{r['forward_ms']:.2f}", f"{r['self_ms']:.2f}")
    return table


def checkpoint_lines(plan: Doc) -> list[str]:
    """What checkpointing chose and what it did, measured."""
    slow = plan.get("slowdown")
    slowdown = "" if slow is None else f" ({slow['median']:.2f}x [{slow['ci95'][0]:.2f}-{slow['ci95'][1]:.2f}])"
    act, ms = plan["activation_bytes"], plan["step_ms"]
    share = 1 - act["after"] / act["before"] if act["before"] else 0.0
    lines = [f"checkpointed {len(plan['chosen'])} block(s): {', '.join(plan['chosen']) or 'none'}",
             f"activations saved for backward: {fmt_bytes(act['before'])} -> {fmt_bytes(act['after'])} "
             f"(-{share:.0%}; budget {fmt_bytes(plan['budget_bytes'])}: {'met' if plan['met'] else 'NOT met'})",
             f"forward+backward: {ms['before']:.1f} ms -> {ms['after']:.1f} ms{slowdown}"]
    return lines + ([plan["note"]] if plan.get("note") else [])


def memory_renderables(doc: Doc) -> list[RenderableType]:
    """The table, then the checkpoint plan when one was asked for."""
    items: list[RenderableType] = [memory_table(doc)]
    if doc.get("checkpoint"):
        items.append("\n".join(checkpoint_lines(doc["checkpoint"])))
    return items


def _trial_label(kwargs: Doc) -> str:
    return ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "defaults (num_workers=0)"


def data_table(doc: Doc) -> Table:
    """One row per DataLoader setting tried."""
    table = Table(title=Text("DataLoader settings, measured (speed-up in batches/s vs num_workers=0)",
                             style="table.title"), title_justify="left")
    for col in ("settings", "status", "batches/s", "first batch ms", "speed-up [95% CI]", "verdict"):
        table.add_column(col, justify="left" if col in ("settings", "status", "verdict") else "right")
    for t in doc.get("trials", []):
        r = t.get("speedup")
        table.add_row(Text(_trial_label(t["kwargs"])), Text(t["status"] if not t.get("reason") else
                                                            f"{t['status']}: {t['reason']}"),
                      "-" if t.get("batches_per_s") is None else f"{t['batches_per_s']:.1f}",
                      "-" if t.get("first_batch_ms") is None else f"{t['first_batch_ms']:.0f}",
                      "-" if r is None else f"{r['median']:.2f}x [{r['ci95'][0]:.2f}-{r['ci95'][1]:.2f}]",
                      "" if r is None else r["verdict"])
    return table


def data_renderables(doc: Doc) -> list[RenderableType]:
    """The trials, the verdict, the notes."""
    return [data_table(doc), str(doc.get("verdict", "")), *map(str, doc.get("notes", []))]


def gradcheck_lines(doc: Doc) -> list[str]:
    """``pitstop gradcheck``: the verdict, then per input its worst Jacobian element, then messages."""
    head = "gradients OK (gradcheck and gradgradcheck in float64)" if doc.get("ok") else "gradients WRONG"
    lines = [head]
    for i in doc.get("inputs", []):
        state = "ok" if i.get("ok") else "FAILED"
        worst = i.get("worst")
        where = "" if not worst else (f"; worst at output[{worst[0]}] / input[{worst[1]}]: analytical "
                                      f"{i.get('analytical'):.6g} vs numerical {i.get('numerical'):.6g}")
        lines.append(f"  input {i.get('index')} {list(i.get('shape', []))}: gradcheck {state} "
                     f"(max abs err {i.get('max_abs_err'):.3g}{where})")
    lines += [f"  {m}" for m in doc.get("messages", [])]
    return lines
