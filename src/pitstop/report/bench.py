"""``pitstop bench``'s terminal report from its JSON document: one table per batch size, the
notes, claimed vs measured, the advice. The helpers (cells, claims) serve optimize and train too.

Rich renders colour on a TTY and plain text in pipes and CI."""

from __future__ import annotations

import statistics
from html import escape
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes, fmt_ms, num
from pitstop.report.kind import Kind
from pitstop.report.svg import Bar, bar_chart, line_chart, ms, run_page
from pitstop.report.svg import html_table as _table

Doc = dict[str, Any]
VERDICT_STYLE = {"faster": "green", "slower": "red", "within noise": "yellow"}
STATUS_STYLE = {"ok": "green", "rejected": "magenta", "failed": "red", "skipped": "dim"}


def fidelity(row: Doc) -> str:
    """Relative error vs the eval reference (0 when bit-identical)."""
    fid = row.get("fidelity")
    if not fid:
        return "-"
    if "error" in fid:
        return str(fid["error"])
    return "0" if fid.get("rel_err") == 0 else num(fid.get("rel_err"), ".1e")


def _agreement(row: Doc) -> str:
    fid = row.get("fidelity") or {}
    return f"{fid['agreement']:.0%}" if "agreement" in fid else "-"


def status(row: Doc) -> Text:
    return Text(row["status"], style=STATUS_STYLE.get(row["status"], ""))


def speedup(row: Doc) -> tuple[str, Text]:
    """The speed-up cell ``1.23x [1.20-1.26]`` and the verdict, or ``-`` without a comparison."""
    sp = row.get("speedup")
    if not sp:
        return "-", Text("")
    return f"{sp['median']:.2f}x [{sp['ci95'][0]:.2f}-{sp['ci95'][1]:.2f}]", \
        Text(sp["verdict"], style=VERDICT_STYLE.get(sp["verdict"], ""))


def rows_at(doc: Doc, batch_size: int) -> list[Doc]:
    return [r for r in doc.get("results", []) if r["batch_size"] == batch_size]


def batch_sizes(doc: Doc) -> list[int]:
    return list(dict.fromkeys(r["batch_size"] for r in doc.get("results", [])))


def batch_table(doc: Doc, batch_size: int) -> Table:
    """The table of one batch size."""
    env = doc.get("environment") or {}
    inputs = (doc.get("inputs") or {}).get(str(batch_size), "")
    table = Table(
        title=Text(f"{doc.get('model', '')} · batch {batch_size} · {inputs} · {env.get('threads')} threads · "
                   f"{env.get('device', 'cpu')} · speed-ups vs {doc.get('baseline')}", style="table.title"),
        title_justify="left",
    )
    for header, justify in [("variant", "left"), ("status", "left"), ("ms/batch [95% CI]", "right"),
                            ("ms/sample", "right"), ("p10-p90 ms", "right"), ("samples/s", "right"),
                            ("speed-up [95% CI]", "right"), ("verdict", "left"),
                            ("peak mem", "right"), ("saved for bwd", "right"), ("rel err", "right"),
                            ("argmax", "right")]:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows_at(doc, batch_size):
        table.add_row(*_cells(doc, row))
    return table


def _cells(doc: Doc, row: Doc) -> list[RenderableType]:
    lat, per = row.get("latency_ms"), row.get("latency_per_sample_ms")
    memory = [fmt_bytes(row.get("peak_memory_bytes")), fmt_bytes(row.get("activation_bytes")), fidelity(row),
              _agreement(row)]
    if lat is None or per is None:
        return [Text(row["variant"]), status(row), *["-"] * 4, "", "", *memory]
    timing = [f"{fmt_ms(lat['median'])} [{fmt_ms(lat['ci95'][0])}-{fmt_ms(lat['ci95'][1])}]",
              fmt_ms(per["median"]), f"{fmt_ms(lat['p10'])}-{fmt_ms(lat['p90'])}",
              f"{row['throughput_per_s']:,.0f}" if row.get("throughput_per_s") is not None else "-"]
    speed, verdict = ("baseline", Text("")) if row["variant"] == doc.get("baseline") else speedup(row)
    return [Text(row["variant"]), status(row), *timing, speed, verdict, *memory]


def rel_halfwidth(lat: Doc) -> float:
    """Half the interval's width relative to the median (the precision target's unit)."""
    lo, hi = lat["ci95"]
    return (hi - lo) / 2 / lat["median"] if lat["median"] > 0 else float("inf")


def load_line(load: dict[str, Any], chose: bool = True) -> str:
    """The machine's load while measuring, in one line (``chose``: a search, which then chose no
    thread count; a bench only measures what it was asked to)."""
    share = load.get("others_cpu_share")
    busy = f"; other processes used {share:.0%} of the CPU" if share is not None else ""
    verdict = (" (busy: thread counts were not chosen)" if chose else " (busy: thread counts measure the "
               "other processes as much as the model)") if load.get("busy") else ""
    return f"Machine load: load average {load.get('loadavg_start', 0):.2f} -> {load.get('loadavg_end', 0):.2f}" \
           f"{busy}{verdict}"


def notes(doc: Doc) -> list[str]:
    """Reasons, notes and precision reached, one line each."""
    lines = []
    rows = doc.get("results", [])
    for row in rows:
        where = f"b={row['batch_size']} {row['variant']}"
        if row.get("reason"):
            lines.append(f"{where}: {row['status']}: {row['reason']}")
        if row.get("note"):
            lines.append(f"{where}: {row['note']}")
    lines += _fault_notes(rows)
    measured = [r for r in rows if r.get("latency_ms")]
    if measured:
        worst = max(measured, key=lambda r: rel_halfwidth(r["latency_ms"]))
        target = (doc.get("settings") or {}).get("timing", {}).get("target", 0.02)
        n = sum(len(r.get("samples_ms") or []) for r in measured)
        replicas = len(measured[0].get("samples_by_replica_ms") or [measured[0].get("samples_ms")])
        lines.append(f"{n} timed calls in {replicas} worker processes per variant; widest "
                     f"median interval ±{rel_halfwidth(worst['latency_ms']):.1%} "
                     f"(b={worst['batch_size']} {worst['variant']}; target ±{target:.0%}){_disagreement(worst)}")
    load = (doc.get("environment") or {}).get("load")
    if load:
        lines.append(load_line(load, chose=doc.get("kind") != "bench"))
    if doc.get("interrupted"):
        lines.append("interrupted: the results above are partial")
    return lines


def _disagreement(row: Doc) -> str:
    """Explain a wide interval by the replicas' own medians when they disagree."""
    meds = sorted(statistics.median(g) for g in row.get("samples_by_replica_ms") or [] if g)
    if len(meds) < 2 or meds[-1] / meds[0] < 1.05:
        return ""
    return (f"; its worker processes disagree: medians {', '.join(fmt_ms(m) for m in meds)} ms, "
            "so the interval covers the process, not just the calls")


FAULTS_NOTABLE = 1000  # page faults per call: ~4 MiB of memory handed back to the OS and re-touched


def _fault_notes(rows: list[Doc]) -> list[str]:
    """Flag variants whose calls keep faulting memory in (the allocator, not the model, costs time)."""
    heavy = [r for r in rows if (r.get("page_faults_per_call") or 0) >= FAULTS_NOTABLE]
    if not heavy:
        return []
    listed = ", ".join(f"b={r['batch_size']} {r['variant']} {r['page_faults_per_call']:,.0f}" for r in heavy[:4])
    more = f" and {len(heavy) - 4} more" if len(heavy) > 4 else ""
    return [f"page faults per call: {listed}{more}. The allocator returns memory to the OS after each call and "
            "faults it back in; such calls may run faster in a process that keeps its memory (measure with "
            "--worker-env MALLOC_MMAP_THRESHOLD_=1073741824 --worker-env MALLOC_TRIM_THRESHOLD_=1073741824, "
            "or tcmalloc via LD_PRELOAD)"]


def claims_table(claims: list[Doc]) -> Table | None:
    """Claimed vs measured here (the document's ``claims``)."""
    if not claims:
        return None
    table = Table(title=Text("Claimed vs measured here (time cut = 1 - 1/speed-up)", style="table.title"),
                  title_justify="left")
    for header in ("claim", "source", "batch", "claimed", "measured here [95% CI]", "verdict"):
        table.add_column(header)
    for c in claims:
        lo, hi = c["claimed_time_cut"]
        claimed = f"{lo:.1%}" if lo == hi else f"{lo:.0%}-{hi:.0%}"
        measured = "-"
        if c.get("measured_ci95") and c.get("measured_time_cut") is not None:
            ci = c["measured_ci95"]
            measured = f"{c['measured_time_cut']:.1%} [{ci[0]:.1%} to {ci[1]:.1%}]"
        style = {"consistent": "green", "inconclusive": "yellow"}.get(c["verdict"], "red")
        table.add_row(Text(c["claim"]), Text(str(c.get("source", ""))), Text(str(c.get("batch_size", ""))),
                      claimed, measured, Text(c["verdict"], style=style))
    return table


def renderables(doc: Doc) -> list[RenderableType]:
    """Everything the terminal report shows, in order."""
    items: list[RenderableType] = [batch_table(doc, bs) for bs in batch_sizes(doc)]
    items += [Text(line, style="dim") for line in notes(doc)]
    claims = claims_table(doc.get("claims") or [])
    if claims is not None:
        items.append(claims)
    if doc.get("results") and doc.get("advice"):
        items.append(Text(doc["advice"], style="bold"))
    return items


def _rows_by_batch(doc: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    by: dict[int, dict[str, dict[str, Any]]] = {}
    for r in doc.get("results", []):
        by.setdefault(int(r["batch_size"]), {})[r["variant"]] = r  # a later stage's row replaces an earlier one
    return {b: list(rows.values()) for b, rows in sorted(by.items())}


def _latency_charts(doc: dict[str, Any], baseline: str) -> list[str]:
    out = []
    for batch, rows in _rows_by_batch(doc).items():
        ok = [r for r in rows if r.get("status") == "ok" and r.get("latency_ms")]
        if not ok:
            continue
        ok.sort(key=lambda r: r["latency_ms"]["median"])
        best = ok[0]["variant"]
        bars = [Bar(r["variant"], r["latency_ms"]["median"], r["latency_ms"]["ci95"][0], r["latency_ms"]["ci95"][1],
                    kind="baseline" if r["variant"] == baseline else "best" if r["variant"] == best else "")
                for r in ok]
        out.append(bar_chart(f"Latency per call at batch {batch} (median, 95% interval; grey = {baseline})", bars,
                             "milliseconds per call"))
        sp = [r for r in ok if r.get("speedup")]
        if sp:
            bars = [Bar(r["variant"], r["speedup"]["median"], r["speedup"]["ci95"][0], r["speedup"]["ci95"][1],
                        kind="best" if r["speedup"]["ci95"][0] > 1 else "bad" if r["speedup"]["ci95"][1] < 1 else "")
                    for r in sorted(sp, key=lambda r: -r["speedup"]["median"])]
            vs = sp[0]["speedup"].get("vs", baseline)
            out.append(bar_chart(f"Speed-up over {vs} at batch {batch} (green: faster beyond noise, red: slower)",
                                 bars, f"speed-up over {vs} (x)", reference=1.0, reference_label=f"1x = {vs}"))
    out += _pareto(doc)
    return out


def _pareto(doc: dict[str, Any]) -> list[str]:
    by_variant: dict[str, list[tuple[float, float]]] = {}
    for batch, rows in _rows_by_batch(doc).items():
        for r in rows:
            if r.get("status") == "ok" and r.get("latency_ms") and r.get("throughput_per_s"):
                by_variant.setdefault(r["variant"], []).append((r["latency_ms"]["median"],
                                                                r["throughput_per_s"] * batch))
    if sum(len(v) for v in by_variant.values()) < 2 or all(len(v) < 2 for v in by_variant.values()):
        return []
    points = [p for v in by_variant.values() for p in v]
    front = [p for p in points if not any(q[0] <= p[0] and q[1] >= p[1] and q != p for q in points)]
    series = {k: sorted(v) for k, v in by_variant.items()}
    return [line_chart("Latency vs throughput across batch sizes (circled: the Pareto front)", series,
                       "latency per call (ms)", "throughput (samples/s)", highlight=front)]


def _results_table(doc: dict[str, Any]) -> str:
    rows = []
    for r in doc.get("results", []):
        lat = r.get("latency_ms") or {}
        sp = r.get("speedup") or {}
        fid = r.get("fidelity") or {}
        rows.append([r.get("stage", ""), r["batch_size"], r["variant"], r["status"] + (f": {r['reason']}" if
                                                                                       r.get("reason") else ""),
                     ms(lat.get("median")), f"{sp['median']:.2f}x [{sp['ci95'][0]:.2f}-{sp['ci95'][1]:.2f}] "
                     f"{sp.get('verdict', '')}" if sp else "-", f"{fid['rel_err']:.1e}" if "rel_err" in fid else "-"])
    return _table(["stage", "batch", "variant", "status", "ms/call", "speed-up [95% CI]", "rel err"], rows)


def bench_html(doc: dict[str, Any], fragment: bool = False) -> str:
    """``pitstop bench`` / ``pitstop optimize`` as a page (or a fragment for Jupyter)."""
    kind = doc.get("kind", "bench")
    baseline = doc.get("baseline", "train+grad")
    sections = [f"<p>Model <b>{escape(str(doc.get('model', '')))}</b>; speed-ups are measured side by side, "
                f"interleaved in one run.</p>"]
    win = doc.get("winner")
    if kind == "optimize" and win:
        sp = win.get("speedup") or {}
        sections.append(f"<h2>Winner</h2><p><b>{escape(str(win.get('variant')))}</b> at batch "
                        f"{escape(str(win.get('batch_size')))}" + (f": {sp['median']:.2f}x "
                        f"[{sp['ci95'][0]:.2f}-{sp['ci95'][1]:.2f}] vs {escape(baseline)}" if sp else "") + "</p>")
    sections += _latency_charts(doc, baseline)
    sections.append("<h2>Every measurement</h2>" + _results_table(doc))
    return run_page(sections, doc, f"pitstop {kind}: {doc.get('model', '')}", fragment)


KINDS = {"bench": Kind(renderables, bench_html, "BENCH_SCHEMA")}
