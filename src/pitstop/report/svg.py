"""Inline SVG charts: no script, no font, no network. Every chart has a title, axis labels with
units and a text alternative (``<title>``/``<desc>`` plus a caption); every string is escaped.
Colours come from CSS variables so the page's light/dark/print styles apply."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

W, ROW, PAD_L, PAD_R, PAD_T, PAD_B = 760, 22, 300, 90, 40, 44
_ids = [0]


def ms(v: Any) -> str:
    """A figure in three significant digits, ``-`` where nothing was measured."""
    return "-" if v is None else f"{v:.3g}"


def restart_ids() -> None:
    """Number a new page's chart ids from 1, so one document always gives the same page (a
    notebook's fragments keep counting: they share one page)."""
    _ids[0] = 0


def _uid(prefix: str) -> str:
    _ids[0] += 1
    return f"{prefix}{_ids[0]}"


def _nice(hi: float) -> float:
    if hi <= 0 or not math.isfinite(hi):
        return 1.0
    exp = 10 ** math.floor(math.log10(hi))
    for m in (1, 2, 2.5, 5, 10):
        if hi <= m * exp:
            return m * exp
    return 10 * exp


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    step = _nice((hi - lo) / n) if hi > lo else 1.0
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 2) if start + i * step <= hi + 1e-12]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 0.01:
        return f"{v:.2g}"
    return f"{v:.3g}"


def _frame(title: str, desc: str, height: int, body: list[str]) -> str:
    tid, did = _uid("t"), _uid("d")
    return (f'<figure class="chart"><svg role="img" viewBox="0 0 {W} {height}" '
            f'width="100%" aria-labelledby="{tid} {did}"><title id="{tid}">{escape(title)}</title>'
            f'<desc id="{did}">{escape(desc)}</desc>'
            f'<text x="{W / 2}" y="20" class="ttl" text-anchor="middle">{escape(title)}</text>'
            + "".join(body) + f"</svg><figcaption>{escape(desc)}</figcaption></figure>")


@dataclass
class Bar:
    label: str
    value: float
    lo: float | None = None
    hi: float | None = None
    kind: str = ""  # "baseline" | "best" | "bad" | ""


def bar_chart(title: str, bars: Sequence[Bar], unit: str, *, reference: float | None = None,
              reference_label: str = "") -> str:
    """Horizontal bars with 95%-interval whiskers; ``reference`` draws a vertical line (1x, the
    baseline's value)."""
    if not bars:
        return ""
    hi = max([b.hi if b.hi is not None else b.value for b in bars] + ([reference] if reference else []))
    top = _nice(hi * 1.05)
    height = PAD_T + ROW * len(bars) + PAD_B
    plot_w = W - PAD_L - PAD_R

    def x(v: float) -> float:
        return PAD_L + plot_w * max(0.0, min(v, top)) / top

    body = []
    for t in _ticks(0, top):
        body.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{PAD_T - 4}" y2="{height - PAD_B}" class="grid"/>'
                    f'<text x="{x(t):.1f}" y="{height - PAD_B + 14}" class="tick" text-anchor="middle">'
                    f"{_fmt(t)}</text>")
    for i, b in enumerate(bars):
        y = PAD_T + i * ROW
        cls = {"baseline": "bar base", "best": "bar best", "bad": "bar bad"}.get(b.kind, "bar")
        body.append(f'<text x="{PAD_L - 6}" y="{y + ROW * 0.65:.1f}" class="lbl" text-anchor="end">'
                    f"{escape(b.label[:48])}</text>"
                    f'<rect x="{PAD_L}" y="{y + 3}" width="{max(0.5, x(b.value) - PAD_L):.1f}" height="{ROW - 6}" '
                    f'class="{cls}"><title>{escape(b.label)}: {_fmt(b.value)} {escape(unit)}</title></rect>')
        if b.lo is not None and b.hi is not None:
            ym = y + ROW / 2
            body.append(f'<path d="M{x(b.lo):.1f} {ym:.1f}H{x(b.hi):.1f}M{x(b.lo):.1f} {ym - 5:.1f}V{ym + 5:.1f}'
                        f'M{x(b.hi):.1f} {ym - 5:.1f}V{ym + 5:.1f}" class="ci"/>')
        body.append(f'<text x="{x(b.value) + 4 if b.hi is None else x(b.hi) + 4:.1f}" y="{y + ROW * 0.65:.1f}" '
                    f'class="val">{_fmt(b.value)}</text>')
    if reference is not None:
        body.append(f'<line x1="{x(reference):.1f}" x2="{x(reference):.1f}" y1="{PAD_T - 6}" y2="{height - PAD_B}" '
                    f'class="ref"/><text x="{x(reference) + 3:.1f}" y="{PAD_T - 8}" class="tick">'
                    f"{escape(reference_label)}</text>")
    body.append(f'<text x="{PAD_L + plot_w / 2}" y="{height - 8}" class="axis" text-anchor="middle">'
                f"{escape(unit)}</text>")
    desc = f"{title}. " + "; ".join(
        f"{b.label}: {_fmt(b.value)} {unit}" + (f" [{_fmt(b.lo)}-{_fmt(b.hi)}]" if b.lo is not None and b.hi is not None
                                                else "") for b in bars)
    return _frame(title, desc[:2000], height, body)


def line_chart(title: str, series: Mapping[str, Sequence[tuple[float, float | None]]], x_label: str, y_label: str,
               *, markers: Sequence[tuple[float, str]] = (), log_y: bool = False,
               highlight: Sequence[tuple[float, float]] = ()) -> str:
    """Lines over x (steps, batch sizes); ``markers`` draw labelled vertical lines; ``highlight``
    circles points (a Pareto front). None values break the line (non-finite)."""
    pts = [(x, y) for s in series.values() for x, y in s if y is not None and (y > 0 or not log_y)]
    if not pts:
        return ""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    fy = (lambda v: math.log10(v)) if log_y else (lambda v: v)
    y0, y1 = fy(min(ys)), fy(max(ys))
    if y1 <= y0:
        y1 = y0 + 1
    if not log_y:
        y0 = min(0.0, y0)
    height, left, right = 300, 80, 160
    plot_w, plot_h = W - left - right, height - PAD_T - PAD_B

    def px(v: float) -> float:
        return left + plot_w * (v - x0) / (x1 - x0)

    def py(v: float) -> float:
        return PAD_T + plot_h * (1 - (fy(v) - y0) / (y1 - y0))

    body = []
    for t in _ticks(y0, y1):
        label = _fmt(10 ** t) if log_y else _fmt(t)
        yy = PAD_T + plot_h * (1 - (t - y0) / (y1 - y0))
        if PAD_T - 1 <= yy <= PAD_T + plot_h + 1:
            body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>'
                        f'<text x="{left - 6}" y="{yy + 4:.1f}" class="tick" text-anchor="end">{label}</text>')
    for t in _ticks(x0, x1):
        if x0 <= t <= x1:
            body.append(f'<text x="{px(t):.1f}" y="{PAD_T + plot_h + 16}" class="tick" text-anchor="middle">'
                        f"{_fmt(t)}</text>")
    for i, (name, s) in enumerate(series.items()):
        d, pen = [], "M"
        for x, y in s:
            if y is None or (log_y and y <= 0):
                pen = "M"
                continue
            d.append(f"{pen}{px(x):.1f} {py(y):.1f}")
            pen = "L"
        body.append(f'<path d="{" ".join(d)}" class="line s{i % 8}"><title>{escape(name)}</title></path>')
        last = next(((x, y) for x, y in reversed(s) if y is not None and (y > 0 or not log_y)), None)
        if last:
            body.append(f'<text x="{left + plot_w + 6}" y="{py(last[1]) + 4:.1f}" class="lbl s{i % 8}t">'
                        f"{escape(name[:24])}</text>")
        if len(s) <= 12:
            for x, y in s:
                if y is not None and (y > 0 or not log_y):
                    body.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" class="dot s{i % 8}"/>')
    for x, y in highlight:
        body.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="7" class="front"/>')
    for x, label in markers:
        body.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{PAD_T}" y2="{PAD_T + plot_h}" class="mark"/>'
                    f'<text x="{px(x) + 3:.1f}" y="{PAD_T + 10}" class="marktxt">{escape(label[:20])}</text>')
    body.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" class="axis" text-anchor="middle">'
                f"{escape(x_label)}</text><text transform=\"translate(16 {PAD_T + plot_h / 2}) rotate(-90)\" "
                f'class="axis" text-anchor="middle">{escape(y_label)}</text>')
    def summary(name: str, s: Sequence[tuple[float, float | None]]) -> str:
        known = [y for _, y in s if y is not None]
        return f"{name} ({len(known)} points, last {_fmt(known[-1]) if known else 'none'})"

    desc = f"{title}: {y_label} against {x_label} for " + ", ".join(summary(n, s) for n, s in series.items())
    if markers:
        desc += "; markers at " + ", ".join(f"{label} ({_fmt(x)})" for x, label in markers[:20])
    return _frame(title, desc[:2000], height, body)


CSS = """
:root{--fg:#1d2330;--bg:#ffffff;--muted:#5b6474;--grid:#e3e6ec;--bar:#6b8fd6;--base:#9aa3b2;--best:#2f9e63;
--bad:#d1495b;--ci:#1d2330;--ref:#d1495b;--card:#f5f7fa}
@media (prefers-color-scheme: dark){:root{--fg:#e6e9ef;--bg:#14171c;--muted:#a3abb9;--grid:#2c323c;--bar:#7fa2ea;
--base:#6c7585;--best:#4cc38a;--bad:#ef6f80;--ci:#e6e9ef;--ref:#ef6f80;--card:#1c2027}}
@media print{:root{--fg:#000;--bg:#fff;--card:#fff}body{max-width:none}}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);
max-width:1100px;margin:24px auto;padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid var(--grid);padding:4px 6px;text-align:left;vertical-align:top}
pre{background:var(--card);padding:10px;overflow:auto;font-size:12px}
.chart{margin:12px 0}.chart figcaption{color:var(--muted);font-size:12px}
svg text{fill:var(--fg);font:12px system-ui,sans-serif}svg .ttl{font-weight:600;font-size:14px}
svg .tick,svg .marktxt{fill:var(--muted);font-size:11px}svg .grid{stroke:var(--grid)}
svg .bar{fill:var(--bar)}svg .bar.base{fill:var(--base)}svg .bar.best{fill:var(--best)}svg .bar.bad{fill:var(--bad)}
svg .ci{stroke:var(--ci);fill:none;stroke-width:1.5}svg .ref{stroke:var(--ref);stroke-dasharray:4 3}
svg .mark{stroke:var(--bad);stroke-dasharray:3 3}svg .front{fill:none;stroke:var(--best);stroke-width:2}
svg .line{fill:none;stroke-width:2}svg .axis{fill:var(--muted)}
.s0{stroke:#4e79a7}.s1{stroke:#f28e2b}.s2{stroke:#59a14f}.s3{stroke:#e15759}.s4{stroke:#76b7b2}.s5{stroke:#edc948}
.s6{stroke:#b07aa1}.s7{stroke:#9c755f}.dot{fill:var(--bg);stroke-width:2}
.s0t{fill:#4e79a7}.s1t{fill:#f28e2b}.s2t{fill:#59a14f}.s3t{fill:#e15759}.s4t{fill:#76b7b2}.s5t{fill:#edc948}
.s6t{fill:#b07aa1}.s7t{fill:#9c755f}
.sev-error{color:var(--bad);font-weight:600}.sev-warning{color:#c98a00;font-weight:600}.muted{color:var(--muted)}
"""


def page(title: str, sections: Sequence[str]) -> str:
    """A complete, self-contained HTML document (inline CSS and SVG only)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{escape(title)}</h1>" + "".join(sections) + "</body></html>\n")


def html_table(headers: list[str], rows: list[list[Any]], raw: frozenset[int] = frozenset()) -> str:
    """A table; every cell escaped but the columns in ``raw`` (already HTML)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if i in raw else escape(str(c))}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def environment_table(env: dict[str, Any]) -> str:
    """The environment section every page ends with."""
    import json

    keep = ["pitstop", "torch", "python", "platform", "cpu", "physical_cores", "threads", "device", "gpu",
            "allocator", "onnxruntime", "seed", "isolation"]
    rows = [[k, json.dumps(env[k]) if isinstance(env[k], (dict, list)) else env[k]] for k in keep if k in env]
    return "<h2>Environment</h2>" + html_table(["", "value"], rows)


def fragment(sections: Sequence[str]) -> str:
    """For Jupyter (``_repr_html_``): the same charts, with the page's styles, without the page."""
    return f"<div class='pitstop'><style>{CSS}</style>" + "".join(sections) + "</div>"


def run_page(sections: list[str], doc: dict[str, Any], title: str, in_notebook: bool) -> str:
    """A search's page ends alike (bench, optimize, train): the winner's recipe, the advice, then
    the environment (a notebook fragment leaves the environment out)."""
    recipe = (doc.get("winner") or {}).get("recipe")
    if recipe:
        sections.append(f"<h2>Recipe</h2><pre>{escape(recipe)}</pre>")
    if doc.get("advice"):
        sections.append(f"<p>{escape(str(doc['advice']))}</p>")
    if in_notebook:
        return fragment(sections)
    return page(title, [*sections, environment_table(doc.get("environment", {}))])
