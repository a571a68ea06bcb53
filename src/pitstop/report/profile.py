"""``pitstop profile``'s report as text (the terminal table) and as HTML (a stacked phase bar per
step, the step-time timeline, the tables), from the report's JSON document."""

from __future__ import annotations

from html import escape
from typing import Any

from pitstop.report.kind import Kind
from pitstop.report.svg import PAD_B, PAD_L, PAD_R, PAD_T, W, _fmt, _frame, _nice, _ticks, line_chart, page
from pitstop.report.svg import fragment as in_notebook
from pitstop.report.svg import html_table as _html_table

ORDER = ("data", "h2d", "forward", "backward", "optimizer", "sync", "other")
NOT_MEASURED = {"data": "not measured (no DataLoader seen)", "h2d": "not measured (no CUDA device in use)",
                "forward": "not measured (no module forward seen)", "backward": "not measured (no backward seen)",
                "optimizer": "not measured (no optimizer step seen)", "sync": "not measured (sync watch off)",
                "other": "not measured"}


def _num(v: Any, spec: str = ".3g") -> str:
    return "-" if v is None else format(v, spec)


def _headline(doc: dict[str, Any]) -> str:
    s, dd = doc.get("step_ms") or {}, doc.get("drill_down") or {}
    who = f"pitstop profile: {doc['script']}" if doc.get("script") else "pitstop profile"
    if not s.get("median"):
        return f"{who}\nno optimizer step was measured ({doc.get('steps', 0)} completed): nothing to break down"
    lo, hi = s["ci95"]
    left = "step 1 (warm-up)" + (f", steps {dd['left_out'][0]}-{dd['left_out'][1]} (drill-down)"
                                 if dd.get("left_out") else "")
    return (f"{who}\nstep {s['median']:.3g} ms median [95% CI {lo:.3g}-{hi:.3g}] over {s['n']} of "
            f"{doc.get('steps', 0)} optimizer steps ({doc.get('clock', 'wall clock')}; left out: {left})")


def _phase_lines(doc: dict[str, Any]) -> list[str]:
    """Each phase's median over the training steps and its interval (the value lies inside it)."""
    lines = [f"{'phase':<10} {'ms/step':>9} {'share':>6}  95% CI of its median (ms)   (medians per step: they need "
             "not add up)"]
    for p in doc.get("phases", []):
        if p.get("share") is None:
            lines.append(f"{p['name']:<10} {NOT_MEASURED.get(p['name'], 'not measured')}")
            continue
        ci = p.get("ci95") or [None, None]
        lines.append(f"{p['name']:<10} {p['median_ms']:>9.3g} {p['share']:>6.0%}  {_num(ci[0])}-{_num(ci[1])}")
    step = doc.get("step_ms") or {}
    lines.append(f"{'step':<10} {step.get('median') or 0:>9.3g} {'100%':>6}  {_num((step.get('ci95') or [None])[0])}-"
                 f"{_num((step.get('ci95') or [None, None])[1])}")
    return lines


def _rank_lines(doc: dict[str, Any]) -> list[str]:
    """Under torchrun: one line per rank (its step, its work per phase, its all-reduce wait)."""
    job = doc.get("distributed")
    if not job:
        return []
    skew = f"; step-time skew {job['skew']:.2f}x (slowest / fastest rank)" if job.get("skew") else ""
    lines = [f"ranks: {job['world']}{skew}", f"  {'rank':<5} {'step ms':>8} {'data':>7} {'forward':>8} {'backward':>9} "
                                             f"{'optimizer':>10} {'all-reduce wait':>16} {'all-reduce ms':>14} "
                                             f"{'overlapped':>10} {'faults/step':>11}"]
    for r in job.get("ranks", []):
        if r.get("missing"):
            lines.append(f"  {r['rank']:<5} left no summary (crashed, or still running when rank 0 ended)")
            continue
        ph = r.get("phases", {})
        lines.append(f"  {r['rank']:<5} {_num(r.get('step_ms')):>8} {_num(ph.get('data')):>7} "
                     f"{_num(ph.get('forward')):>8} {_num(ph.get('backward')):>9} {_num(ph.get('optimizer')):>10} "
                     f"{_num(r.get('comm_wait_ms')):>16} {_num(r.get('comm_ms')):>14} "
                     f"{_share(r.get('comm_overlapped')):>10} "
                     f"{_num((r.get('page_faults') or {}).get('per_step'), '.0f'):>11}")
    return lines


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _apart_lines(doc: dict[str, Any]) -> list[str]:
    """The evaluation between steps and the stalls, each kept out of the phases above."""
    lines = []
    ev = doc.get("evaluation")
    if ev:
        lines.append(f"eval (the trained model without autograd between steps: validation): {ev['count']} time(s), "
                     f"{ev['median_ms']:.3g} ms each (median), {ev['share_of_wall']:.0%} of the run's wall time; "
                     "not in the steps above")
    stalls = doc.get("stalls") or []
    worst = sorted(sorted(stalls, key=lambda s: -s["wall_ms"])[:5], key=lambda s: s["step"])  # the 5 longest
    for s in worst:
        lines.append(f"stall at step {s['step']}: {s['wall_ms']:.3g} ms (median step {s['median_ms']:.3g} ms), "
                     f"{s['phase_ms']:.3g} ms of it in {s['phase']}; left out of the phases above")
    if len(stalls) > 5:
        lines.append(f"... and {len(stalls) - 5} shorter stalls")
    faults = _faults_line(doc)
    return lines + ([faults] if faults else [])


def _faults_line(doc: dict[str, Any]) -> str | None:
    """The minor page faults per step, where there are any worth a line (10 a step or more)."""
    pf = doc.get("page_faults") or {}
    if (pf.get("per_step") or 0) < 10 or pf.get("ms_per_step") is None:
        return None
    share = f", ~{pf['share']:.0%} of the step" if pf.get("share") is not None else ""
    return (f"page faults: ~{pf['per_step']:.0f} minor faults per step (median) x {pf['us_each']:.2g} us each, "
            f"one fault's cost measured apart on this machine: an estimated ~{pf['ms_per_step']:.3g} ms{share}")


def _sync_lines(doc: dict[str, Any]) -> list[str]:
    syncs = doc.get("syncs", [])
    if not syncs:
        return ["syncs: none seen in the measured steps"]
    lines = ["syncs (the host waits for tensor values), per measured step:",
             f"  {'where':<32} {'what':<34} {'per step':>8} {'ms/step':>8}"]
    lines += [f"  {r['where']:<32} {r['kind']:<34} {r['per_step']:>8.3g} {r['ms']:>8.3g}" for r in syncs[:10]]
    return lines


def _op_lines(doc: dict[str, Any]) -> list[str]:
    dd, ops = doc.get("drill_down") or {}, doc.get("top_ops") or {}
    if not dd.get("steps"):
        why = f" ({dd['error']})" if dd.get("error") else " (the run ended before the drill-down's steps)"
        return [f"top ops: not recorded{why}"] if dd else []
    lines = [f"top ops per phase (torch.profiler, steps {dd['steps'][0]}-{dd['steps'][1]}; self time per step):"]
    for phase in ORDER:
        if ops.get(phase):
            lines.append(f"  {phase:<10} " + ", ".join(f"{o['op']} {o['ms']:.3g} ms" for o in ops[phase][:3]))
    if dd.get("trace"):
        lines.append(f"  trace: {dd['trace']}")
    return lines


def _verdict_lines(doc: dict[str, Any]) -> list[str]:
    verdict = doc.get("verdict", [])
    if not verdict:
        return ["verdict: no cause found"]
    lines = ["verdict (largest expected saving first):"]
    for i, v in enumerate(verdict, 1):
        who = f" on rank {v['rank']}" if v.get("rank") is not None else ""
        lines.append(f"  {i}. {v['cause']}{who} ({v['share']:.0%} of the step; fix saves ~{v['saves']:.0%}, "
                     "an estimate): "
                     f"{v['evidence']}")
        lines.append(f"     -> {v['action']}")
    return lines


def render_text(doc: dict[str, Any]) -> str:
    """The terminal report."""
    parts = [_headline(doc)]
    if (doc.get("step_ms") or {}).get("median"):
        parts += ["\n".join(_phase_lines(doc))]
        parts += ["\n".join(_apart_lines(doc))] if _apart_lines(doc) else []
        parts += ["\n".join(_rank_lines(doc))] if _rank_lines(doc) else []
        parts += ["\n".join(_sync_lines(doc))]
        ops = _op_lines(doc)
        if ops:
            parts.append("\n".join(ops))
        parts.append("\n".join(_verdict_lines(doc)))
    exit_ = doc.get("exit") or {}
    if exit_.get("status") not in (None, "ok"):
        parts.append(f"the script {exit_['status']}: {exit_.get('error', exit_.get('code', ''))}")
    parts += [f"internal warning (training went on): {n}" for n in doc.get("internal", [])]
    return "\n\n".join(parts)


# -- HTML ---------------------------------------------------------------------------------------


def stacked_steps(timeline: list[dict[str, Any]]) -> str:
    """One stacked bar per step, a colour per phase (steps left out of the statistics faded; the
    scale is the measured steps', so a slow first step is cut at the top rather than flattening the rest)."""
    steps = timeline[:200]
    if not steps:
        return ""
    height = 300
    plot_w, plot_h = W - PAD_L // 3 - PAD_R, height - PAD_T - PAD_B
    left = PAD_L // 3
    top = _nice(max(s["wall_ms"] for s in [s for s in steps if s["measured"]] or steps) * 1.05)
    bw = plot_w / len(steps)
    body = []
    for t in _ticks(0, top):
        y = PAD_T + plot_h * (1 - t / top)
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                    f'<text x="{left - 4}" y="{y + 4:.1f}" class="tick" text-anchor="end">{_fmt(t)}</text>')
    for i, s in enumerate(steps):
        y = PAD_T + plot_h
        for k, phase in enumerate(ORDER):
            ms = s["phases"].get(phase, 0.0)
            h = min(plot_h * ms / top, y - PAD_T)  # cut at the top of the plot
            if h > 0:
                y -= h
                body.append(f'<rect x="{left + i * bw:.1f}" y="{y:.1f}" width="{max(bw - 1, 0.5):.1f}" '
                            f'height="{h:.1f}" class="s{k}t" opacity="{1 if s["measured"] else 0.35}">'
                            f'<title>step {s["step"]} {phase}: {ms:.3g} ms</title></rect>')
    legend = "".join(f'<rect x="{left + 90 * k}" y="{height - 22}" width="10" height="10" class="s{k}t"/>'
                     f'<text x="{left + 90 * k + 14}" y="{height - 13}" class="tick">{p}</text>'
                     for k, p in enumerate(ORDER))
    body.append(legend)
    desc = ("Per optimizer step, the time of each phase stacked (ms); faded steps are left out of the statistics. "
            + "; ".join(f"step {s['step']}: {s['wall_ms']:.3g} ms" for s in steps[:40]))
    return _frame("Where each step's time goes (stacked phases, ms)", desc, height, body)


def profile_html(doc: dict[str, Any], fragment: bool = False) -> str:
    """The page (or notebook fragment) for a ``kind: profile`` document."""
    sections = [f"<p>{escape(_headline(doc))}</p>"]
    timeline = doc.get("timeline", [])
    sections.append(stacked_steps(timeline))
    if timeline:
        shown = [(s["step"], s["wall_ms"]) for s in timeline if s["step"] > 1] or [(1, timeline[0]["wall_ms"])]
        sections.append(line_chart("Step time per optimizer step (from step 2: the first one warms up)",
                                   {"step ms": shown}, "optimizer step", "ms per step"))
    rows = [[p["name"], _num(p.get("median_ms")) if p.get("share") is not None else NOT_MEASURED[p["name"]],
             f"{p['share']:.0%}" if p.get("share") is not None else "-"] for p in doc.get("phases", [])]
    sections.append("<h2>Phases (per step)</h2>" + _html_table(["phase", "ms/step", "share"], rows))
    if _faults_line(doc):
        sections.append(f"<p>{escape(_faults_line(doc) or '')}</p>")
    sections.append("<h2>Verdict</h2>" + _html_table(
        ["cause", "share", "fix saves (an estimate)", "evidence", "next action"],
        [[v["cause"], f"{v['share']:.0%}", f"~{v['saves']:.0%}", v["evidence"], v["action"]]
         for v in doc.get("verdict", [])]))
    sections.append("<h2>Syncs</h2>" + _html_table(["where", "what", "per step", "ms/step"], [
        [r["where"], r["kind"], f"{r['per_step']:.3g}", f"{r['ms']:.3g}"] for r in doc.get("syncs", [])]))
    ops = [[phase, o["op"], f"{o['ms']:.3g}", f"{o['calls']:.3g}"] for phase in ORDER
           for o in (doc.get("top_ops") or {}).get(phase, [])]
    sections.append("<h2>Top ops per phase</h2>" + (_html_table(["phase", "op", "ms/step", "calls/step"], ops)
                                                     if ops else "<p>Not recorded.</p>"))
    if fragment:
        return in_notebook(sections)
    return page("pitstop profile", sections)


KINDS = {"profile": Kind(lambda doc: [render_text(doc)], profile_html, "PROFILE_SCHEMA")}
