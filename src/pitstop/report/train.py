"""Rendering of a train run: the candidates table (step ms [95% CI], samples/s, peak memory,
fidelity, compile s, break-even steps, verdict), the reasons, the winner and the recipe; and
the HTML page of its JSON document (kind ``train``)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes, fmt_ms, num
from pitstop.report.bench import load_line, speedup, status
from pitstop.report.kind import Kind
from pitstop.report.optimize import closing, is_winner, latest_rows
from pitstop.report.svg import Bar, bar_chart, line_chart, run_page
from pitstop.report.svg import html_table as _table

Doc = dict[str, Any]
NAIVE_NAME = "naive"  # the baseline every train stage measures alongside (pitstop.train.config)

_HEADERS = ("variant", "stage", "status", "step ms [95% CI]", "samples/s", "speed-up [95% CI]", "verdict", "MFU",
            "peak mem", "grad cos min/all", "loss after N", "compile s", "break-even steps")


def fidelity_cells(fidelity: dict[str, Any] | None) -> tuple[str, str]:
    """The step-1 gradient cosines (worst parameter / overall) and the final losses vs the band."""
    fid = fidelity or {}
    grads = fid.get("gradients") or {}
    cos = "-"
    if grads.get("min_cosine") is not None:
        cos = f"{num(grads['min_cosine'], '.3f')}/{num(grads.get('overall_cosine'), '.4f')}"
    loss = "-"
    trajectory, band = fid.get("trajectory") or {}, fid.get("band")
    if trajectory.get("losses"):
        finals = ", ".join(num(run[-1], ".3g") for run in trajectory["losses"])
        loss = finals + (f" in [{num(band['low'], '.3g')}, {num(band['high'], '.3g')}]" if band else "")
    return cos, loss


def candidates_table(doc: Doc) -> Table:
    """Every variant, from the last stage that measured it."""
    s, script = doc.get("settings") or {}, doc.get("script")
    base = "the unmodified script" if script else "fp32 eager, for-loop optimizer"
    where = "" if script else f" · batch {s.get('batch_size')}"
    table = Table(title=Text(f"{doc.get('model', '')}{where} · {s.get('threads')} threads · {s.get('device')} · "
                             f"speed-ups vs {NAIVE_NAME} ({base}), measured in the same stage", style="table.title"),
                  title_justify="left")
    rows = latest_rows(doc)
    names = max((len(r["variant"]) for r in rows), default=7)  # a variant's name is never cut
    for header in _HEADERS:
        table.add_column(header, justify="left" if header in ("variant", "stage", "status", "verdict") else "right",
                         no_wrap=header != "loss after N",  # the long cell wraps, so no name is cut
                         min_width={"variant": names, "status": 8, "verdict": 12}.get(header))
    for row in rows:
        speed, verdict = ("baseline", Text("")) if row["variant"] == NAIVE_NAME else speedup(row)
        lat, even, used = row.get("latency_ms"), row.get("break_even_steps"), row.get("mfu") or {}
        cos, loss = fidelity_cells(row.get("fidelity"))
        table.add_row(Text(row["variant"], style="bold" if is_winner(doc, row) else ""), Text(row.get("stage", "")),
                      status(row),
                      f"{fmt_ms(lat['median'])} [{fmt_ms(lat['ci95'][0])}-{fmt_ms(lat['ci95'][1])}]" if lat else "-",
                      f"{row['throughput_per_s']:,.0f}" if row.get("throughput_per_s") and not script else "-",
                      speed, verdict, f"{used['fraction']:.1%}" if used.get("fraction") is not None else "-",
                      fmt_bytes(row.get("peak_memory_bytes")), cos, loss,
                      f"{row['compile_s']:.1f}" if row.get("compile_s") is not None else "-",
                      f"{even:,.0f}" if even is not None else "-")
    return table


def machine_lines(doc: Doc) -> list[str]:
    """FLOPs per step and the measured peaks (what MFU is a share of), and the machine's load."""
    lines = []
    where = doc.get("script") or doc.get("problem") or {}
    flops, peaks = where.get("flops_per_step"), where.get("peaks") or {}
    if flops and peaks:
        shown = ", ".join(f"{k} {v / 1e9:,.0f} GFLOP/s" for k, v in peaks.items())
        lines.append(f"MFU: {flops / 1e9:,.3g} GFLOP per step (torch.utils.flop_counter) against this machine's "
                     f"measured matmul peak ({shown})")
    load = (doc.get("environment") or {}).get("load")
    if load:
        lines.append(load_line(load))
    waits = (doc.get("script") or {}).get("input_wait") or {}
    if waits:
        shown = "; ".join(f"{name} {w['ms']:.3g} ms of its {w['step_ms']:.3g} ms step ({w['share']:.0%})"
                          for name, w in waits.items())
        lines.append(f"Input wait (time in the DataLoader's next(), per step, median): {shown}")
    return lines


def reasons(doc: Doc) -> list[str]:
    """Why each variant was skipped, rejected or failed, and what ran."""
    lines = []
    for row in latest_rows(doc):
        if row.get("reason"):
            lines.append(f"{row['variant']}: {row['status']}: {row['reason']}")
        grads = (row.get("fidelity") or {}).get("gradients") or {}
        if grads.get("min_cosine") is not None and grads["min_cosine"] < 0.99:
            lines.append(f"{row['variant']}: step-1 gradient of {grads['min_cosine_param']} has cosine "
                         f"{num(grads['min_cosine'], '.3f')} (reported; the trajectory decides)")
    return lines


def renderables(doc: Doc) -> list[RenderableType]:
    """Everything, in reading order."""
    band = next(((r.get("fidelity") or {}).get("band") for r in latest_rows(doc)
                 if (r.get("fidelity") or {}).get("band")), None)
    items: list[RenderableType] = [candidates_table(doc)]
    if band:
        items.append(Text(f"Trajectory gate: the loss after {band['steps']} steps must lie within the fp32 "
                          f"reference's {band['seeds']} seeds ({', '.join(num(f, '.4g') for f in band['finals'])}) "
                          f"widened by {band['tolerance']:.0%} of its decrease ({num(band['widened_by'], '.3g')}): "
                          f"[{num(band['low'], '.4g')}, {num(band['high'], '.4g')}]"))
    items += [Text(line) for line in reasons(doc)]
    items += [Text(line) for line in machine_lines(doc)]
    items += [Text(line, style="bold") for line in closing(doc)]
    recipe, script = (doc.get("winner") or {}).get("recipe"), doc.get("script")
    if recipe and script:
        items += [Text("The change (file:line: what; --patch FILE writes it as a diff for git apply):", style="bold"),
                  *(Text(f"  {line}") for line in script.get("changes", [])), Text(recipe)]
    elif recipe:
        items += [Text("Recipe (recipe.py with --save):", style="bold"), Text(recipe)]
    return items


def _row_cells(r: dict[str, Any]) -> list[Any]:
    lat, sp = r.get("latency_ms") or {}, r.get("speedup") or {}
    cos, loss = fidelity_cells(r.get("fidelity"))
    return [r.get("stage", ""), r["variant"], r["status"] + (f": {r['reason']}" if r.get("reason") else ""),
            f"{lat['median']:.3g}" if lat else "-",
            f"{sp['median']:.2f}x [{sp['ci95'][0]:.2f}-{sp['ci95'][1]:.2f}] {sp.get('verdict', '')}" if sp else "-",
            cos, loss, f"{r['compile_s']:.1f}" if r.get("compile_s") is not None else "-",
            f"{r['break_even_steps']:,.0f}" if r.get("break_even_steps") is not None else "-"]


def train_html(doc: dict[str, Any], fragment: bool = False) -> str:
    """``pitstop train`` as a page (or a fragment for Jupyter), from its JSON document."""
    win = doc.get("winner") or {}
    sp = win.get("speedup") or {}
    sections = [f"<p>Model <b>{escape(str(doc.get('model', '')))}</b>; step times measured side by side, "
                f"interleaved, against {NAIVE_NAME} (fp32 eager, for-loop optimizer).</p>",
                f"<h2>Winner</h2><p><b>{escape(str(win.get('variant')))}</b>" +
                (f": {sp['median']:.2f}x [{sp['ci95'][0]:.2f}-{sp['ci95'][1]:.2f}]" if sp else "") + "</p>"]
    final = {r["variant"]: r for r in doc.get("results", []) if r.get("status") == "ok" and r.get("speedup")}
    if final:
        bars = [Bar(name, r["speedup"]["median"], r["speedup"]["ci95"][0], r["speedup"]["ci95"][1],
                    kind="best" if r["speedup"]["ci95"][0] > 1 else "bad" if r["speedup"]["ci95"][1] < 1 else "")
                for name, r in sorted(final.items(), key=lambda p: -p[1]["speedup"]["median"])]
        sections.append(bar_chart(f"Step-time speed-up over {NAIVE_NAME}", bars, "speed-up (x)", reference=1.0,
                                  reference_label=f"1x = {NAIVE_NAME}"))
    curves: dict[str, Sequence[tuple[float, float | None]]] = {
        f"{r['variant']} seed {seed}": [(float(i + 1), loss) for i, loss in enumerate(run)]
              for r in doc.get("results", []) if (r.get("fidelity") or {}).get("trajectory")
              for seed, run in zip(r["fidelity"]["trajectory"]["seeds"], r["fidelity"]["trajectory"]["losses"],
                                   strict=False)}
    if curves:
        sections.append(line_chart("Loss per step (the trajectory gate)", curves, "step", "loss"))
    sections.append("<h2>Every measurement</h2>" + _table(
        ["stage", "variant", "status", "step ms", "speed-up [95% CI]", "grad cos min/all", "loss after N",
         "compile s", "break-even steps"], [_row_cells(r) for r in doc.get("results", [])]))
    return run_page(sections, doc, f"pitstop train: {doc.get('model', '')}", fragment)


KINDS = {"train": Kind(renderables, train_html, "TRAIN_SCHEMA")}
