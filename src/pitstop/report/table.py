"""Terminal report: one table per batch size, notes, claimed vs measured, advice.

Rich renders colour on a TTY and plain text in pipes and CI."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes, fmt_ms, literal
from pitstop.bench.claims import check_claims
from pitstop.bench.result import BenchResult, Measurement

_VERDICT_STYLE = {"faster": "green", "slower": "red", "within noise": "yellow"}
_STATUS_STYLE = {"ok": "green", "rejected": "magenta", "failed": "red", "skipped": "dim"}


def _fidelity(row: Measurement) -> str:
    """Relative error vs the eval reference (0 when bit-identical)."""
    fid = row.fidelity
    if not fid:
        return "-"
    if "error" in fid:
        return fid["error"]
    return "0" if fid["rel_err"] == 0 else f"{fid['rel_err']:.1e}"


def _agreement(row: Measurement) -> str:
    fid = row.fidelity or {}
    return f"{fid['agreement']:.0%}" if "agreement" in fid else "-"


def batch_table(result: BenchResult, batch_size: int) -> Table:
    """The table of one batch size."""
    env = result.environment
    table = Table(
        title=f"{result.model} · batch {batch_size} · {result.inputs.get(batch_size, '')} · "
              f"{env.get('threads')} threads · {env.get('device', 'cpu')} · speed-ups vs {result.baseline}",
        title_justify="left",
    )
    for header, justify in [("variant", "left"), ("status", "left"), ("ms/batch [95% CI]", "right"),
                            ("ms/sample", "right"), ("p10-p90 ms", "right"), ("samples/s", "right"),
                            ("speed-up [95% CI]", "right"), ("verdict", "left"),
                            ("peak mem", "right"), ("saved for bwd", "right"), ("rel err", "right"),
                            ("argmax", "right")]:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in result.rows_at(batch_size):
        table.add_row(*_cells(result, row))
    return table


def _cells(result: BenchResult, row: Measurement) -> list[RenderableType]:
    status = Text(row.status, style=_STATUS_STYLE[row.status])
    lat, per = row.latency, row.per_sample
    if lat is None or per is None:
        return [row.variant, status, *["-"] * 4, "", "", fmt_bytes(row.peak_memory_bytes),
                fmt_bytes(row.activation_bytes), _fidelity(row), _agreement(row)]
    timing = [f"{fmt_ms(lat.median)} [{fmt_ms(lat.ci95[0])}-{fmt_ms(lat.ci95[1])}]",
              fmt_ms(per.median), f"{fmt_ms(lat.p10)}-{fmt_ms(lat.p90)}", f"{row.throughput:,.0f}"]
    comparison = result.comparison(row.variant, row.batch_size) if row.variant != result.baseline else None
    if comparison is None:
        speed, verdict = ("baseline", Text("")) if row.variant == result.baseline else ("-", Text(""))
    else:
        r = comparison.ratio
        speed = f"{r.median:.2f}x [{r.ci95[0]:.2f}-{r.ci95[1]:.2f}]"
        verdict = Text(r.verdict, style=_VERDICT_STYLE[r.verdict])
    return [row.variant, status, *timing, speed, verdict, fmt_bytes(row.peak_memory_bytes),
            fmt_bytes(row.activation_bytes), _fidelity(row), _agreement(row)]


def notes(result: BenchResult) -> list[str]:
    """Reasons, notes and precision reached, one line each."""
    lines = []
    for row in result.rows:
        where = f"b={row.batch_size} {row.variant}"
        if row.reason:
            lines.append(f"{where}: {row.status}: {row.reason}")
        if row.note:
            lines.append(f"{where}: {row.note}")
    lines += _fault_notes(result)
    measured = [r for r in result.rows if r.latency]
    if measured:
        worst = max(measured, key=lambda r: r.latency.rel_halfwidth)  # type: ignore[union-attr]
        target = result.settings.get("timing", {}).get("target", 0.02)
        n = sum(len(r.samples_s) for r in measured)
        lines.append(f"{n} timed calls in {len(measured[0].replica_samples_s)} worker processes per variant; widest "
                     f"median interval ±{worst.latency.rel_halfwidth:.1%} "  # type: ignore[union-attr]
                     f"(b={worst.batch_size} {worst.variant}; target ±{target:.0%}){_disagreement(worst)}")
    if result.interrupted:
        lines.append("interrupted: the results above are partial")
    return lines


def _disagreement(row: Measurement) -> str:
    """Explain a wide interval by the replicas' own medians when they disagree."""
    meds = sorted(float(np.median(g)) * 1e3 for g in row.replica_samples_s if g)
    if len(meds) < 2 or meds[-1] / meds[0] < 1.05:
        return ""
    return (f"; its worker processes disagree: medians {', '.join(fmt_ms(m) for m in meds)} ms, "
            "so the interval covers the process, not just the calls")


FAULTS_NOTABLE = 1000  # page faults per call: ~4 MiB of memory handed back to the OS and re-touched


def _fault_notes(result: BenchResult) -> list[str]:
    """Flag variants whose calls keep faulting memory in (the allocator, not the model, costs time)."""
    heavy = [r for r in result.rows if (r.page_faults_per_call or 0) >= FAULTS_NOTABLE]
    if not heavy:
        return []
    listed = ", ".join(f"b={r.batch_size} {r.variant} {r.page_faults_per_call:,.0f}" for r in heavy[:4])
    more = f" and {len(heavy) - 4} more" if len(heavy) > 4 else ""
    return [f"page faults per call: {listed}{more}. The allocator returns memory to the OS after each call and "
            "faults it back in; such calls may run faster in a process that keeps its memory (measure with "
            "--worker-env MALLOC_MMAP_THRESHOLD_=1073741824 --worker-env MALLOC_TRIM_THRESHOLD_=1073741824, "
            "or tcmalloc via LD_PRELOAD)"]


def claims_table(result: BenchResult) -> Table | None:
    """Claimed vs measured here."""
    checks = check_claims(result)
    if not checks:
        return None
    table = Table(title="Claimed vs measured here (time cut = 1 - 1/speed-up)", title_justify="left")
    for header in ("claim", "source", "batch", "claimed", "measured here [95% CI]", "verdict"):
        table.add_column(header)
    for c in checks:
        lo, hi = c.claim.low, c.claim.high
        claimed = f"{lo:.1%}" if lo == hi else f"{lo:.0%}-{hi:.0%}"
        measured = "-"
        if c.ci95 and c.measured is not None:
            measured = f"{c.measured:.1%} [{c.ci95[0]:.1%} to {c.ci95[1]:.1%}]"
        style = {"consistent": "green", "inconclusive": "yellow"}.get(c.verdict, "red")
        table.add_row(c.claim.text, c.claim.source, str(c.batch_size), claimed, measured,
                      Text(c.verdict, style=style))
    return table


def renderables(result: BenchResult) -> list[RenderableType]:
    """Everything the terminal report shows, in order."""
    items: list[RenderableType] = [batch_table(result, bs) for bs in result.batch_sizes]
    items += [Text(line, style="dim") for line in notes(result)]
    claims = claims_table(result)
    if claims is not None:
        items.append(claims)
    if result.rows:
        items.append(Text(result.advice(), style="bold"))
    return items


def render_text(result: BenchResult, width: int = 200) -> str:
    """The report as plain text."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, no_color=True, highlight=False).print(literal(Group(*renderables(result))))
    return buffer.getvalue()
