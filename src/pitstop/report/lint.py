"""``pitstop lint``'s concise report from its JSON document (``path:line:col: CODE [*] message``,
then the summary), as text and as an HTML page."""

from __future__ import annotations

from html import escape
from typing import Any

Doc = dict[str, Any]


def lint_lines(doc: Doc) -> list[str]:
    """One line per finding, then ``Found N findings in M files.`` (or ``All checks passed``)."""
    findings, files = doc.get("findings", []), doc.get("files", 0)
    out = [f"{f['path']}:{f['line']}:{f['col']}: {f['code']}{_marker(f)} {f['message']}" for f in findings]
    plural = "s" if files != 1 else ""
    if not findings:
        return [*out, f"All checks passed ({files} file{plural})."]
    safe = sum(1 for f in findings if f.get("fixable") == "safe")
    risky = sum(1 for f in findings if f.get("fixable") == "unsafe")
    text = f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} in {files} file{plural}."
    if safe or risky:
        text += f" {safe} fixable with --fix" + (f" ({risky} more with --unsafe-fixes)" if risky else "") + "."
    return [*out, text]


def _marker(f: Doc) -> str:
    return {"safe": " [*]", "unsafe": " [-]"}.get(f.get("fixable") or "", "")


def lint_html(doc: Doc, fragment: bool = False) -> str:
    """The findings as a table."""
    from pitstop.report.svg import fragment as in_notebook
    from pitstop.report.svg import page

    rows = "".join(f"<tr><td class='sev-{escape(f['severity'])}'>{escape(f['code'])} {escape(f.get('name', ''))}"
                   f"</td><td>{escape(f['where'])}</td><td>{escape(f['message'])}</td><td>{escape(f.get('fix') or '')}"
                   "</td></tr>" for f in doc.get("findings", []))
    sections = [f"<p>{escape(lint_lines(doc)[-1])}</p>",
                "<table><tr><th>code</th><th>where</th><th>message</th><th>fix</th></tr>" + rows + "</table>"]
    if fragment:
        return in_notebook(sections)
    return page("pitstop lint", sections)
