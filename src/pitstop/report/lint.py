"""``pitstop lint``'s text from its JSON document's findings: the concise lines (``path:line:col:
CODE [*] message``), the full form (the source line and a caret), the summary, for the live command
(coloured on a terminal) and for ``pitstop report``; and the HTML page."""

from __future__ import annotations

from html import escape
from typing import Any

from pitstop.report.kind import Kind

Doc = dict[str, Any]


_COLOUR = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_RESET, _BOLD = "\033[0m", "\033[1m"


def lint_lines(doc: Doc) -> list[str]:
    """One line per finding, then ``Found N findings in M files.`` (or ``All checks passed``)."""
    findings = doc.get("findings", [])
    return [*concise_lines(findings), summary_line(findings, doc.get("files", 0))]


def concise_lines(findings: list[Doc], colour: bool = False, unsafe: bool = False) -> list[str]:
    """``path:line:col: CODE [*] message``, one line per finding (the live output's default)."""
    out = []
    for f in findings:
        code = f"{_COLOUR[f['severity']]}{_BOLD}{f['code']}{_RESET}" if colour else f["code"]
        where = f"{f['path']}:{f['line']}:{f['col']}:"
        out.append(f"{_BOLD}{where}{_RESET} {code}{_marker(f, unsafe)} {f['message']}" if colour
                   else f"{where} {code}{_marker(f, unsafe)} {f['message']}")
    return out


def full_lines(findings: list[Doc], sources: dict[str, str], colour: bool = False, unsafe: bool = False
               ) -> list[str]:
    """Each finding with its source line, a caret under the span, and the code's name and fix."""
    out = []
    for f in findings:
        out += concise_lines([f], colour, unsafe)
        lines = (sources.get(f["path"]) or "").splitlines()
        line, col = f["line"], f["col"]
        if 0 < line <= len(lines):
            text = lines[line - 1].rstrip()
            width = max(1, (f["end_col"] - col) if f["end_line"] == line else len(text) - col + 1)
            out += [f"   {line:>4} | {text}", f"        | {' ' * (col - 1)}{'^' * width}"]
        fix = f"{f['fix']} ({f['fixable']} fix)" if f.get("fixable") else f["fix"]
        out += [f"        = {f['name']} ({f['severity']}): {fix}", ""]
    return out


def summary_line(findings: list[Doc], files: int, unsafe: bool = False) -> str:
    """``Found N findings in M files.`` with what ``--fix`` would fix, or ``All checks passed``."""
    plural = "s" if files != 1 else ""
    if not findings:
        return f"All checks passed ({files} file{plural})."
    safe = sum(1 for f in findings if f.get("fixable") == "safe")
    risky = sum(1 for f in findings if f.get("fixable") == "unsafe")
    text = f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} in {files} file{plural}."
    if safe or risky:
        text += f" {safe} fixable with --fix"
        if risky:
            text += f" ({risky} more with --unsafe-fixes)" if not unsafe else f", {risky} with --unsafe-fixes"
        text += "."
    return text


def _marker(f: Doc, unsafe: bool = False) -> str:
    """``[*]`` when ``--fix`` would fix it, ``[-]`` when only ``--unsafe-fixes`` would."""
    fixable = f.get("fixable")
    if not fixable:
        return ""
    return " [*]" if fixable == "safe" or unsafe else " [-]"


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


KINDS = {"lint": Kind(lambda doc: ["\n".join(lint_lines(doc))], lint_html, "LINT_SCHEMA")}
