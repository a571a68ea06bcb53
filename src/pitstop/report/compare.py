"""The comparison of two results (``kind: compare``, computed by ``pitstop.compare``) as text."""

from __future__ import annotations

from html import escape
from typing import Any

from pitstop.report.kind import Kind
from pitstop.report.svg import Bar, bar_chart, ms, page
from pitstop.report.svg import fragment as _fragment
from pitstop.report.svg import html_table as _table


def compare_lines(doc: dict[str, Any]) -> list[str]:
    """The comparison as text, from its JSON document (``kind: compare``)."""
    threshold = doc.get("threshold", 0.05)
    before, after = doc.get("before"), doc.get("after")
    out = [f"pitstop compare: {before} -> {after} (time per call; > 1x = slower; regression "
           f"threshold {threshold:.0%})"]
    out += [f"warning: the environments differ: {w}" for w in doc.get("environment_differences", [])]
    out += [f"warning: compared on partial results: {p}" for p in doc.get("partial", [])]
    n = 0
    for c in doc.get("changes", []):
        regression = c["verdict"] == "regression" and c["ratio"] - 1 > threshold
        n += regression
        out.append(f"  b={c['batch_size']:<4} {c['variant']:<48} {c['before_ms']:9.3f} -> {c['after_ms']:9.3f} ms  "
                   f"{c['ratio']:.3f}x [{c['ci95'][0]:.3f}-{c['ci95'][1]:.3f}] {c['verdict']}"
                   f"{' <- REGRESSION' if regression else ''}")
    out += [f"  only in {before}: {name}" for name in doc.get("only_before", [])]
    out += [f"  only in {after}: {name}" for name in doc.get("only_after", [])]
    if doc.get("nothing_compared"):
        out.append(f"nothing compared: {doc['nothing_compared']}; no verdict")
    else:
        out.append(f"{n} regression(s) beyond {threshold:.0%}" if n else f"no regression beyond {threshold:.0%}")
    return out


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
                           [[c["variant"], c["batch_size"], ms(c["before_ms"]), ms(c["after_ms"]),
                             f"{c['ratio']:.3f}x [{c['ci95'][0]:.3f}-{c['ci95'][1]:.3f}]", c["verdict"]]
                            for c in doc.get("changes", [])]))
    if fragment:
        return _fragment(sections)
    return page("pitstop compare", sections)


KINDS = {"compare": Kind(lambda doc: ["\n".join(compare_lines(doc))], compare_html, "COMPARE_SCHEMA")}
