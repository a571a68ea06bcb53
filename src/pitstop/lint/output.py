"""Lint's machine formats: the JSON document (docs/json.md), SARIF 2.1.0 and GitHub workflow
annotations. The text formats (concise, the default, and full, with the source line) render the
document's findings in ``pitstop.report.lint``, as ``pitstop report`` does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pitstop._document import envelope
from pitstop.codes import CODES, Code
from pitstop.lint.rules import Diagnostic

FORMATS = ("concise", "full", "json", "sarif", "github")
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_GITHUB = {"error": "error", "warning": "warning", "info": "notice"}


def finding_dict(d: Diagnostic) -> dict[str, Any]:
    c = CODES[d.code]
    return {"code": d.code, "name": c.name, "severity": d.level, "message": d.message,
            "where": f"{d.path}:{d.line}:{d.col}", "fix": d.fix.description if d.fix else c.fix,
            "fixable": None if d.fix is None else ("safe" if d.fix.safe else "unsafe"),
            "path": d.path, "line": d.line, "col": d.col, "end_line": d.end_line, "end_col": d.end_col}


def json_document(findings: list[Diagnostic], files: int, lines: int, environment: dict[str, Any]) -> dict[str, Any]:
    return envelope("lint", environment, files=files, lines=lines, findings=[finding_dict(d) for d in findings])


def _rule(c: Code) -> dict[str, Any]:
    return {"id": c.code, "name": c.name,
            "shortDescription": {"text": f"{c.name}: {c.summary[:200]}"},
            "fullDescription": {"text": c.summary},
            "help": {"text": f"{c.fix}. Run `pitstop explain {c.code}`."},
            "defaultConfiguration": {"level": _LEVEL[c.severity]},
            "properties": {"kinds": c.kinds, "severity": c.severity}}


def sarif(findings: list[Diagnostic], root: Path | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, every code as a rule, fixes as SARIF fixes."""
    from pitstop import __version__

    codes = sorted(CODES)
    index = {c: i for i, c in enumerate(codes)}
    results = []
    for d in findings:
        region = {"startLine": d.line, "startColumn": d.col, "endLine": d.end_line, "endColumn": max(d.end_col, 1)}
        result: dict[str, Any] = {
            "ruleId": d.code, "ruleIndex": index[d.code], "level": _LEVEL[d.level],
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(d.path, root)}, "region": region}}],
        }
        if d.fix is not None:
            result["properties"] = {"fixable": "safe" if d.fix.safe else "unsafe"}
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "pitstop", "version": __version__, "semanticVersion": __version__,
                                "rules": [_rule(CODES[c]) for c in codes]}},
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    }


def _uri(path: str, root: Path | None) -> str:
    p = Path(path)
    if root is not None:
        try:
            p = p.resolve().relative_to(root.resolve())
        except ValueError:
            return p.resolve().as_uri()
    return p.as_posix()


def github(findings: list[Diagnostic]) -> list[str]:
    """``::error file=...,line=...::message`` lines that GitHub Actions turns into annotations."""
    out = []
    for d in findings:
        c = CODES[d.code]
        title, path = _property(f"{d.code} {c.name}"), _property(d.path)
        out.append(f"::{_GITHUB[d.level]} title={title},file={path},line={d.line},col={d.col},"
                   f"endLine={d.end_line},endColumn={d.end_col}::{_data(f'{d.code} {d.message}')}")
    return out


def _data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped (a newline would start a new command)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value (a file name): the message escapes plus ``:`` and ``,``."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2)
