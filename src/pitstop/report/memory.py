"""``pitstop memory``'s and ``pitstop data``'s terminal reports from their JSON documents: the
activation table per module (and the checkpoint plan), the DataLoader trials."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes
from pitstop.report.kind import Kind
from pitstop.report.svg import Bar, bar_chart, ms, page
from pitstop.report.svg import environment_table as _environment
from pitstop.report.svg import fragment as _fragment
from pitstop.report.svg import html_table as _table

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


def memory_html(doc: dict[str, Any], fragment: bool = False) -> str:
    mods = [m for m in doc.get("modules", []) if m.get("depth", 0) > 0 and m.get("subtree_bytes", 0) > 0]
    top = sorted(mods, key=lambda m: -m["subtree_bytes"])[:25]
    sections = [f"<p>Model <b>{escape(str(doc.get('model', '')))}</b>: {doc.get('activation_bytes', 0) / 2**20:.2f} "
                f"MiB saved for backward; forward+backward {doc.get('step_ms', 0):.1f} ms.</p>"]
    sections.append(bar_chart("Activation memory per module (bytes saved for backward in its subtree)",
                              [Bar(m["module"], m["subtree_bytes"] / 2**20) for m in top], "MiB"))
    plan = doc.get("checkpoint")
    if plan:
        sections.append(f"<h2>Checkpointing</h2><p>chosen: {escape(', '.join(plan['chosen']) or 'none')}; "
                        f"activations {plan['activation_bytes']['before'] / 2**20:.1f} -> "
                        f"{plan['activation_bytes']['after'] / 2**20:.1f} MiB; step "
                        f"{plan['step_ms']['before']:.1f} -> {plan['step_ms']['after']:.1f} ms; budget "
                        f"{'met' if plan['met'] else 'not met'}</p>")
    sections.append(_table(["module", "type", "saved here (bytes)", "subtree (bytes)", "forward ms"],
                           [[m["module"], m["type"], m["saved_bytes"], m["subtree_bytes"], f"{m['forward_ms']:.2f}"]
                            for m in doc.get("modules", [])]))
    if fragment:
        return _fragment(sections)
    sections.append(_environment(doc.get("environment", {})))
    return page(f"pitstop memory: {doc.get('model', '')}", sections)


def data_html(doc: dict[str, Any], fragment: bool = False) -> str:
    """``pitstop data``: the verdict, batches/s per DataLoader setting, every trial."""
    trials = doc.get("trials", [])
    ok = [t for t in trials if t.get("batches_per_s")]
    sections = [f"<p><b>{escape(str(doc.get('verdict', '')))}</b></p>",
                bar_chart("Batches per second per DataLoader setting", [Bar(", ".join(
                    f"{k}={v}" for k, v in t["kwargs"].items()) or "defaults", t["batches_per_s"]) for t in ok],
                    "batches/s") if ok else "",
                _table(["settings", "status", "batches/s", "first batch ms", "speed-up [95% CI]", "verdict"],
                       [[json.dumps(t["kwargs"]), t["status"] + (f": {t['reason']}" if t.get("reason") else ""),
                         ms(t.get("batches_per_s")), ms(t.get("first_batch_ms")),
                         f"{t['speedup']['median']:.2f}x" if t.get("speedup") else "-",
                         (t.get("speedup") or {}).get("verdict", "")] for t in trials])]
    sections += [f"<p>{escape(str(n))}</p>" for n in doc.get("notes", [])]
    if fragment:
        return _fragment(sections)
    sections.append(_environment(doc.get("environment", {})))
    return page("pitstop data", sections)


def gradcheck_html(doc: dict[str, Any], fragment: bool = False) -> str:
    """``pitstop gradcheck``: the verdict and, per input, the worst element of the Jacobians."""
    head, *rest = gradcheck_lines(doc)
    sections = [f"<p><b>{escape(head)}</b> for <code>{escape(str(doc.get('function', '')))}</code> on "
                f"<code>{escape(str(doc.get('input', '')))}</code></p>",
                _table(["input", "shape", "gradcheck", "max abs err", "worst (output / input)", "analytical",
                        "numerical"],
                       [[str(i.get("index")), str(i.get("shape")), "ok" if i.get("ok") else "FAILED",
                         f"{i.get('max_abs_err', 0):.3g}", "-" if not i.get("worst") else
                         f"{i['worst'][0]} / {i['worst'][1]}", ms(i.get("analytical")), ms(i.get("numerical"))]
                        for i in doc.get("inputs", [])])]
    sections += [f"<p>{escape(str(m))}</p>" for m in doc.get("messages", [])]
    del rest
    if fragment:
        return _fragment(sections)
    sections.append(_environment(doc.get("environment", {})))
    return page("pitstop gradcheck", sections)


KINDS = {"memory": Kind(memory_renderables, memory_html, "MEMORY_SCHEMA"),
         "data": Kind(data_renderables, data_html, "DATA_SCHEMA"),
         "gradcheck": Kind(lambda doc: ["\n".join(gradcheck_lines(doc))], gradcheck_html, "GRADCHECK_SCHEMA")}
