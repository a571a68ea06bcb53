"""HTML rendering for Jupyter (``_repr_html_``). Every user-supplied string is escaped."""

from __future__ import annotations

from html import escape

from pitstop.measure.measurement import BenchResult
from pitstop.report.table import _agreement, _fidelity, fmt_bytes, fmt_ms


def bench_html(result: BenchResult) -> str:
    """A compact HTML table of every row, plus the advice."""
    head = ("<tr><th>batch</th><th>variant</th><th>status</th><th>ms/batch [95% CI]</th>"
            "<th>ms/sample</th><th>speed-up [95% CI]</th><th>verdict</th><th>peak mem</th>"
            "<th>saved for bwd</th><th>rel err</th><th>argmax</th></tr>")
    body = []
    for row in result.rows:
        lat, per = row.latency, row.per_sample
        cmp = result.comparison(row.variant, row.batch_size) if row.variant != result.baseline else None
        cells = [str(row.batch_size), row.variant, row.status + (f": {row.reason}" if row.reason else ""),
                 f"{fmt_ms(lat.median)} [{fmt_ms(lat.ci95[0])}-{fmt_ms(lat.ci95[1])}]" if lat else "-",
                 fmt_ms(per.median) if per else "-",
                 f"{cmp.ratio.median:.2f}x [{cmp.ratio.ci95[0]:.2f}-{cmp.ratio.ci95[1]:.2f}]" if cmp else
                 ("baseline" if row.variant == result.baseline else "-"),
                 cmp.ratio.verdict if cmp else "", fmt_bytes(row.peak_memory_bytes),
                 fmt_bytes(row.activation_bytes), _fidelity(row), _agreement(row)]
        body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    advice = escape(result.advice()) if result.rows else ""
    return (f"<div class='pitstop-bench'><p><b>pitstop bench</b> {escape(result.model)}</p>"
            f"<table>{head}{''.join(body)}</table><p>{advice}</p></div>")
