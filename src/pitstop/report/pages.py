"""Self-contained HTML reports, built from each command's JSON document (so ``pitstop report
result.json --html`` gives the same page as ``--html`` on the command): inline CSS and SVG, no
script, no external resource; every user string escaped."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from pitstop.errors import UsageError
from pitstop.report.profile import profile_html
from pitstop.report.svg import Bar, bar_chart, line_chart, page, restart_ids, run_page
from pitstop.report.svg import environment_table as _environment
from pitstop.report.svg import fragment as _fragment
from pitstop.report.svg import html_table as _table


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}"


# -- bench / optimize -------------------------------------------------------------------------


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
                     _ms(lat.get("median")), f"{sp['median']:.2f}x [{sp['ci95'][0]:.2f}-{sp['ci95'][1]:.2f}] "
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


# -- doctor -----------------------------------------------------------------------------------


def doctor_html(doc: dict[str, Any], fragment: bool = False) -> str:
    t = doc.get("timeline") or {}
    findings = doc.get("findings", [])
    markers = [(f["step"], f["code"]) for f in findings if f.get("step")]
    sections = [f"<p>{escape(str(doc.get('script') or ''))}: {len(findings)} finding(s) in {doc.get('steps', 0)} "
                f"optimizer step(s); the script {escape(str(doc.get('exit', {}).get('status', 'ok')))}.</p>"]
    if t.get("loss"):
        sections.append(line_chart("Loss per backward (red lines: steps where findings were first seen)",
                                   {"loss": [tuple(p) for p in t["loss"]]}, "optimizer step", "loss",
                                   markers=markers))
    norms = {"total": [tuple(p) for p in t.get("grad_norm", [])]}
    norms.update({k: [tuple(p) for p in v] for k, v in (t.get("layers") or {}).items()})
    if t.get("grad_norm"):
        sections.append(line_chart("Gradient norm: total and the largest layers (log scale)", norms,
                                   "optimizer step", "gradient L2 norm", markers=markers, log_y=True))
    rows = [[f"<span class='sev-{escape(f['severity'])}'>{escape(f['code'])} {escape(f['name'])}</span>",
             escape(f["severity"]), escape(f["where"]), escape(str(f.get("step"))), escape(str(f.get("count"))),
             escape(f["message"]), escape(f.get("fix") or "")] for f in findings]
    sections.append("<h2>Findings</h2>" + (_table(["code", "severity", "where", "first step", "steps",
                                                   "what happened", "fix"], rows, raw=frozenset(range(7)))
                                           if rows else "<p>No findings.</p>"))
    if fragment:
        return _fragment(sections)
    sections.append(_environment(doc.get("environment", {})))
    return page("pitstop doctor", sections)


# -- memory, compare --------------------------------------------------------------------------


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


def compare_html(doc: dict[str, Any], fragment: bool = False) -> str:
    bars = [Bar(f"{c['variant']} b={c['batch_size']}", c["ratio"], c["ci95"][0], c["ci95"][1],
                kind="bad" if c["verdict"] == "regression" else "best" if c["verdict"] == "improvement" else "")
            for c in doc.get("changes", [])]
    verdict = f"nothing compared: {doc['nothing_compared']}; no verdict" if doc.get("nothing_compared") else \
        f"{doc.get('regressions', 0)} regression(s) beyond {doc.get('threshold', 0.05):.0%}"
    sections = [f"<p>{escape(str(doc.get('before')))} -> {escape(str(doc.get('after')))}: {escape(verdict)}.</p>"]
    sections += [f"<p class='sev-warning'>The environments differ: {escape(w)}</p>"
                 for w in doc.get("environment_differences", [])]
    sections += [f"<p class='sev-warning'>Compared on partial results: {escape(str(p))}</p>"
                 for p in doc.get("partial", [])]
    sections.append(bar_chart("Time per call after / before (red: regression, green: improvement)", bars,
                              "after / before (x)", reference=1.0, reference_label="1x = unchanged"))
    sections.append(_table(["variant", "batch", "before ms", "after ms", "ratio [95% CI]", "verdict"],
                           [[c["variant"], c["batch_size"], _ms(c["before_ms"]), _ms(c["after_ms"]),
                             f"{c['ratio']:.3f}x [{c['ci95'][0]:.3f}-{c['ci95'][1]:.3f}]", c["verdict"]]
                            for c in doc.get("changes", [])]))
    if fragment:
        return _fragment(sections)
    return page("pitstop compare", sections)


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
                         _ms(t.get("batches_per_s")), _ms(t.get("first_batch_ms")),
                         f"{t['speedup']['median']:.2f}x" if t.get("speedup") else "-",
                         (t.get("speedup") or {}).get("verdict", "")] for t in trials])]
    sections += [f"<p>{escape(str(n))}</p>" for n in doc.get("notes", [])]
    if fragment:
        return _fragment(sections)
    sections.append(_environment(doc.get("environment", {})))
    return page("pitstop data", sections)


def gradcheck_html(doc: dict[str, Any], fragment: bool = False) -> str:
    """``pitstop gradcheck``: the verdict and, per input, the worst element of the Jacobians."""
    from pitstop.report.memory import gradcheck_lines

    head, *rest = gradcheck_lines(doc)
    sections = [f"<p><b>{escape(head)}</b> for <code>{escape(str(doc.get('function', '')))}</code> on "
                f"<code>{escape(str(doc.get('input', '')))}</code></p>",
                _table(["input", "shape", "gradcheck", "max abs err", "worst (output / input)", "analytical",
                        "numerical"],
                       [[str(i.get("index")), str(i.get("shape")), "ok" if i.get("ok") else "FAILED",
                         f"{i.get('max_abs_err', 0):.3g}", "-" if not i.get("worst") else
                         f"{i['worst'][0]} / {i['worst'][1]}", _ms(i.get("analytical")), _ms(i.get("numerical"))]
                        for i in doc.get("inputs", [])])]
    sections += [f"<p>{escape(str(m))}</p>" for m in doc.get("messages", [])]
    del rest
    if fragment:
        return _fragment(sections)
    sections.append(_environment(doc.get("environment", {})))
    return page("pitstop gradcheck", sections)


def _train_html(doc: dict[str, Any], fragment: bool = False) -> str:
    from pitstop.report.train import train_html

    return train_html(doc, fragment)


def _generate_html(doc: dict[str, Any], fragment: bool = False) -> str:
    from pitstop.report.generate import generate_html

    return generate_html(doc, fragment)


def _lint_html(doc: dict[str, Any], fragment: bool = False) -> str:
    from pitstop.report.lint import lint_html

    return lint_html(doc, fragment)


RENDERERS = {"bench": bench_html, "optimize": bench_html, "doctor": doctor_html, "memory": memory_html,
             "compare": compare_html, "gradcheck": gradcheck_html, "train": _train_html, "profile": profile_html,
             "data": data_html, "lint": _lint_html, "generate": _generate_html}


def render(doc: dict[str, Any]) -> str:
    """The page for any pitstop JSON document."""
    kind = doc.get("kind")
    if kind not in RENDERERS:
        raise UsageError(f"no HTML report for kind {kind!r}; reports exist for {', '.join(RENDERERS)}")
    restart_ids()
    return RENDERERS[kind](doc)


def render_fragment(doc: dict[str, Any]) -> str:
    """The notebook fragment for any pitstop JSON document."""
    return RENDERERS[doc["kind"]](doc, fragment=True)
