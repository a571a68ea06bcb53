"""``pitstop doctor``'s report from its JSON document: the findings table (most severe first), or the
summary line when there is none, then the notes (how the script ended, what was not watched,
internal warnings)."""

from __future__ import annotations

from html import escape
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pitstop.codes import CODES, SEVERITIES
from pitstop.report.kind import Kind
from pitstop.report.svg import environment_table as _environment
from pitstop.report.svg import fragment as _fragment
from pitstop.report.svg import html_table as _table
from pitstop.report.svg import line_chart, page

_COLOUR = {"error": "red", "warning": "yellow", "info": "cyan"}


def summary(doc: dict[str, Any]) -> str:
    """``pitstop doctor: 1 error, 2 warnings in 100 optimizer step(s) (...)``."""
    findings = doc.get("findings", [])
    counts = {s: sum(1 for f in findings if f.get("severity") == s) for s in SEVERITIES}
    found = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no findings"
    extra = []
    if doc.get("data_wait_share") is not None:
        extra.append(f"{doc['data_wait_share']:.0%} of step time waiting for data")
    skipped = (doc.get("guard") or {}).get("skipped_steps") or []
    if skipped:
        extra.append(f"guard skipped {len(skipped)} step(s)")
    if (doc.get("ranks") or 1) > 1:
        extra.append(f"{doc['ranks']} ranks")
    tail = f" ({'; '.join(extra)})" if extra else ""
    return f"pitstop doctor: {found} in {_steps_seen(doc)}{tail}"


def _steps_seen(doc: dict[str, Any]) -> str:
    watched, steps = doc.get("watched") or {}, doc.get("steps", 0)
    optimizers, total = watched.get("optimizers", 1), watched.get("optimizer_steps", steps)
    manual = watched.get("manual_steps", 0)
    if optimizers > 1:
        return f"{total} optimizer steps of {optimizers} optimizers (at most {steps} each)"
    if manual and not total:
        return (f"{manual} step(s) of parameters updated by hand after backward (no optimizer: PIT101, PIT105 "
                "and PIT107 watch optimizer steps and did not run)")
    return f"{steps} optimizer step(s)"


def exit_line(exit_: dict[str, Any], steps: int) -> str:
    """How the script ended, in one line (for any status but ok)."""
    status, where = exit_.get("status"), f" at {exit_['where']}" if exit_.get("where") else ""
    if status == "interrupted":
        return (f"the script was interrupted by {exit_.get('error') or 'KeyboardInterrupt'}{where} after {steps} "
                "optimizer step(s): the findings cover the run up to there")
    if status == "exited":
        return f"the script exited with code {exit_.get('code')}"
    return f"the script {status}: {exit_.get('error', '')}{where}"


def notes(doc: dict[str, Any]) -> list[str]:
    """How the script ended, what was not watched, internal warnings: one line each."""
    exit_ = doc.get("exit") or {}
    lines = [exit_line(exit_, doc.get("steps", 0))] if exit_.get("status") not in ("ok", None) else []
    lines += [f"not watched: {line}" for line in (doc.get("watched") or {}).get("not_watched", [])]
    return lines + [f"internal warning (training went on): {note}" for note in doc.get("internal", [])]


def table(doc: dict[str, Any]) -> Table:
    """One row per finding, most severe first."""
    out = Table(title=summary(doc), title_justify="left", show_lines=True)
    for col in ("code", "severity", "where", "first step", "steps", "what happened", "fix"):
        out.add_column(col, overflow="fold")
    for f in doc.get("findings", []):
        ranks = f" (ranks {','.join(map(str, f['ranks']))})" if f.get("ranks") else ""
        step = str(f["step"]) if f.get("step") is not None else "-"
        fix = f.get("fix") or (CODES[f["code"]].fix if f.get("code") in CODES else "")
        out.add_row(f"{f['code']}\n{f.get('name', '')}", Text(f.get("severity", ""), style=_COLOUR.get(
            f.get("severity", ""), "")), f"{f.get('where', '')}{ranks}", step, str(f.get("count", 1)),
            f.get("message", ""), fix)
    return out


def renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """The findings table (or the summary when there is none), then the notes."""
    head: RenderableType = table(doc) if doc.get("findings") else Text(summary(doc))
    return [head, *(Text(line) for line in notes(doc))]


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


KINDS = {"doctor": Kind(renderables, doctor_html, "DOCTOR_SCHEMA")}
