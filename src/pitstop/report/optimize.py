"""Rendering of an optimize run: the candidates table, latency vs throughput, the winner, the
recipe; and its JSON document (kind ``optimize``)."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import literal
from pitstop.optimize.result import OptimizeReport, verdict_lines
from pitstop.optimize.search import START
from pitstop.report.table import _STATUS_STYLE, _VERDICT_STYLE, _fidelity, claims_table, fmt_bytes, fmt_ms


def candidates_table(report: OptimizeReport) -> Table:
    """Every candidate at the search batch size, from the last stage that measured it."""
    s = report.settings
    table = Table(title=f"{report.model} · batch {s['batch_size']} · {s['threads']} threads · {s['device']} · "
                        f"speed-ups vs {START.name}, measured alongside it in the same stage",
                  title_justify="left")
    for header, justify in [("candidate", "left"), ("stage", "left"), ("status", "left"), ("ms/sample", "right"),
                            ("p10-p90 ms/batch", "right"), ("speed-up [95% CI]", "right"), ("verdict", "left"),
                            ("rel err", "right"), ("compile s", "right"), ("break-even calls", "right"),
                            ("peak mem", "right")]:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    winner = report.outcome.winner
    for stage, row in report.candidates():
        name = Text(row.variant, style="bold" if winner is row else "")
        status = Text(row.status, style=_STATUS_STYLE[row.status])
        speed, verdict = "-", Text("")
        comparison = stage.result.comparison(row.variant, row.batch_size)
        if row.variant == START.name:
            speed = "start point"
        elif comparison:
            r = comparison.ratio
            speed = f"{r.median:.2f}x [{r.ci95[0]:.2f}-{r.ci95[1]:.2f}]"
            verdict = Text(r.verdict, style=_VERDICT_STYLE[r.verdict])
        per, lat = row.per_sample, row.latency
        even = report.break_even(row, stage)
        table.add_row(name, stage.name, status, fmt_ms(per.median) if per else "-",
                      f"{fmt_ms(lat.p10)}-{fmt_ms(lat.p90)}" if lat else "-", speed, verdict, _fidelity(row),
                      f"{row.compile_s:.1f}" if row.compile_s is not None else "-",
                      f"{even:,.0f}" if even is not None else "-", fmt_bytes(row.peak_memory_bytes))
    return table


def sweep_table(report: OptimizeReport) -> Table | None:
    """Latency vs throughput across batch sizes, for the start point and the winner."""
    rows = report.sweep()
    if len({r.batch_size for _, r in rows}) < 2:
        return None
    table = Table(title="latency vs throughput (each batch size measured in its own stage)", title_justify="left")
    for header in ("variant", "batch", "ms/batch median", "p90 ms", "ms/sample", "samples/s"):
        table.add_column(header, justify="left" if header == "variant" else "right", no_wrap=True)
    for _, row in rows:
        lat, per = row.latency, row.per_sample
        if lat and per:
            table.add_row(row.variant, str(row.batch_size), fmt_ms(lat.median), fmt_ms(lat.p90),
                          fmt_ms(per.median), f"{row.throughput:,.0f}")
    return table


def reasons(report: OptimizeReport) -> list[str]:
    """Why each candidate was skipped, rejected or failed, and the notes."""
    lines = []
    for _, row in report.candidates():
        if row.reason:
            lines.append(f"{row.variant}: {row.status}: {row.reason}")
        if row.note:
            lines.append(f"{row.variant}: {row.note}")
        for key, value in row.details.items():
            lines.append(f"{row.variant}: {key} = {value}")
    return lines


def renderables(report: OptimizeReport, with_recipe: bool = True) -> list[RenderableType]:
    """Everything, in reading order."""
    items: list[RenderableType] = [candidates_table(report)]
    sweep = sweep_table(report)
    if sweep is not None:
        items.append(sweep)
    items += [Text(line) for line in reasons(report)]
    probe = report.reference_stage()
    if probe is not None and report.claims_key:
        probe.claims_key = report.claims_key
        claims = claims_table(probe)
        if claims is not None:
            items.append(claims)
    items += [Text(line, style="bold") for line in verdict_lines(report)]
    if with_recipe and report.recipe:
        items += [Text("Recipe (recipe.py with --save):", style="bold"), Text(report.recipe)]
    return items


def render_text(report: OptimizeReport, width: int = 200) -> str:
    """Plain text of the whole report."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    for item in renderables(report):
        console.print(literal(item))
    return buffer.getvalue()
