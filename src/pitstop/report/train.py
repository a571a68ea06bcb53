"""Rendering of a train run: the candidates table (step ms [95% CI], samples/s, peak memory,
fidelity, compile s, break-even steps, verdict), the reasons, the winner and the recipe; and
the HTML page of its JSON document (kind ``train``)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from html import escape
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes, fmt_ms
from pitstop.report.svg import CSS, Bar, bar_chart, line_chart, page
from pitstop.report.table import _STATUS_STYLE, _VERDICT_STYLE
from pitstop.train.config import NAIVE_NAME
from pitstop.train.result import TrainReport, verdict_lines

_HEADERS = ("variant", "stage", "status", "step ms [95% CI]", "samples/s", "speed-up [95% CI]", "verdict", "MFU",
            "peak mem", "grad cos min/all", "loss after N", "compile s", "break-even steps")


def fidelity_cells(fidelity: dict[str, Any] | None) -> tuple[str, str]:
    """The step-1 gradient cosines (worst parameter / overall) and the final losses vs the band."""
    fid = fidelity or {}
    grads = fid.get("gradients") or {}
    cos = "-"
    if grads.get("min_cosine") is not None:
        cos = f"{grads['min_cosine']:.3f}/{grads['overall_cosine']:.4f}"
    loss = "-"
    trajectory, band = fid.get("trajectory") or {}, fid.get("band")
    if trajectory.get("losses"):
        finals = ", ".join(f"{run[-1]:.3g}" for run in trajectory["losses"])
        loss = finals + (f" in [{band['low']:.3g}, {band['high']:.3g}]" if band else "")
    return cos, loss


def candidates_table(report: TrainReport) -> Table:
    """Every variant, from the last stage that measured it."""
    s = report.settings
    base = "the unmodified script" if report.script else "fp32 eager, for-loop optimizer"
    where = "" if report.script else f" · batch {s['batch_size']}"
    table = Table(title=f"{report.model}{where} · {s['threads']} threads · {s['device']} · "
                        f"speed-ups vs {NAIVE_NAME} ({base}), measured in the same stage",
                  title_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="left" if header in ("variant", "stage", "status", "verdict") else "right",
                         no_wrap=True)
    winner = report.outcome.winner
    for stage, row in report.candidates():
        speed, verdict = "-", Text("")
        comparison = stage.result.comparison(row.variant, row.batch_size)
        if row.variant == NAIVE_NAME:
            speed = "baseline"
        elif comparison:
            r = comparison.ratio
            speed, verdict = f"{r.median:.2f}x [{r.ci95[0]:.2f}-{r.ci95[1]:.2f}]", Text(
                r.verdict, style=_VERDICT_STYLE[r.verdict])
        lat = row.latency
        even = report.break_even(row, stage)
        cos, loss = fidelity_cells(row.fidelity)
        table.add_row(Text(row.variant, style="bold" if winner is row else ""), stage.name,
                      Text(row.status, style=_STATUS_STYLE[row.status]),
                      f"{fmt_ms(lat.median)} [{fmt_ms(lat.ci95[0])}-{fmt_ms(lat.ci95[1])}]" if lat else "-",
                      f"{row.throughput:,.0f}" if row.throughput and not report.script else "-", speed, verdict,
                      _mfu_cell(report, row), fmt_bytes(row.peak_memory_bytes), cos, loss,
                      f"{row.compile_s:.1f}" if row.compile_s is not None else "-",
                      f"{even:,.0f}" if even is not None else "-")
    return table


def _mfu_cell(report: TrainReport, row: Any) -> str:
    """Achieved FLOP/s as a share of this machine's matmul peak in the variant's precision."""
    from pitstop.train.peaks import mfu

    flops, peaks = report.flops()
    used = mfu(flops, row.latency.median / 1e3 if row.latency else None, str(row.config.get("precision", "fp32")),
               peaks)
    return f"{used['fraction']:.1%}" if used and used.get("fraction") is not None else "-"


def machine_lines(report: TrainReport) -> list[str]:
    """FLOPs per step and the measured peaks (what MFU is a share of), and the machine's load."""
    lines = []
    flops, peaks = report.flops()
    if flops and peaks:
        shown = ", ".join(f"{k} {v / 1e9:,.0f} GFLOP/s" for k, v in peaks.items())
        lines.append(f"MFU: {flops / 1e9:,.3g} GFLOP per step (torch.utils.flop_counter) against this machine's "
                     f"measured matmul peak ({shown})")
    load = (report.environment or {}).get("load")
    if load:
        lines.append(load_line(load))
    return lines


def load_line(load: dict[str, Any]) -> str:
    """The machine's load while measuring, in one line."""
    share = load.get("others_cpu_share")
    busy = f"; other processes used {share:.0%} of the CPU" if share is not None else ""
    verdict = " (busy: thread counts were not chosen)" if load.get("busy") else ""
    return f"Machine load: load average {load.get('loadavg_start', 0):.2f} -> {load.get('loadavg_end', 0):.2f}" \
           f"{busy}{verdict}"


def reasons(report: TrainReport) -> list[str]:
    """Why each variant was skipped, rejected or failed, and what ran."""
    lines = []
    for _, row in report.candidates():
        if row.reason:
            lines.append(f"{row.variant}: {row.status}: {row.reason}")
        grads = (row.fidelity or {}).get("gradients") or {}
        if grads.get("min_cosine") is not None and grads["min_cosine"] < 0.99:
            lines.append(f"{row.variant}: step-1 gradient of {grads['min_cosine_param']} has cosine "
                         f"{grads['min_cosine']:.3f} (reported; the trajectory decides)")
    return lines


def renderables(report: TrainReport, with_recipe: bool = True) -> list[RenderableType]:
    """Everything, in reading order."""
    band = _band(report)
    items: list[RenderableType] = [candidates_table(report)]
    if band:
        items.append(Text(f"Trajectory gate: the loss after {band['steps']} steps must lie within the fp32 "
                          f"reference's {band['seeds']} seeds ({', '.join(f'{f:.4g}' for f in band['finals'])}) "
                          f"widened by {band['tolerance']:.0%} of its decrease ({band['widened_by']:.3g}): "
                          f"[{band['low']:.4g}, {band['high']:.4g}]"))
    items += [Text(line) for line in reasons(report)]
    items += [Text(line) for line in machine_lines(report)]
    items += [Text(line, style="bold") for line in verdict_lines(report)]
    if with_recipe and report.recipe and report.script:
        items += [Text("The change (file:line: what; --patch FILE writes it as a diff for git apply):", style="bold"),
                  *(Text(f"  {line}") for line in report.script.get("changes", [])), Text(report.recipe)]
    elif with_recipe and report.recipe:
        items += [Text("Recipe (recipe.py with --save):", style="bold"), Text(report.recipe)]
    return items


def _band(report: TrainReport) -> dict[str, Any] | None:
    return next(((r.fidelity or {}).get("band") for _, r in report.candidates() if (r.fidelity or {}).get("band")),
                None)


def render_text(report: TrainReport, width: int = 220) -> str:
    """Plain text of the whole report."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    for item in renderables(report):
        console.print(item)
    return buffer.getvalue()


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
    if win.get("recipe"):
        sections.append(f"<h2>Recipe</h2><pre>{escape(win['recipe'])}</pre>")
    if doc.get("advice"):
        sections.append(f"<p>{escape(str(doc['advice']))}</p>")
    if fragment:
        return _fragment(sections)
    sections.append(_environment(doc.get("environment", {})))
    return page(f"pitstop train: {doc.get('model', '')}", sections)



def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _environment(env: dict[str, Any]) -> str:
    keep = ["pitstop", "torch", "python", "platform", "cpu", "physical_cores", "threads", "device", "gpu", "seed",
            "isolation"]
    return "<h2>Environment</h2>" + _table(["", "value"], [[k, env[k]] for k in keep if k in env])


def _fragment(sections: list[str]) -> str:
    return f"<div class='pitstop'><style>{CSS}</style>" + "".join(sections) + "</div>"
