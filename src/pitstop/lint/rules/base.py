"""What every rule shares: the findings it reports (``Diagnostic``, with an optional ``Fix`` made
of text ``Edit``s), the file being linted (``Context``) and the ``Rule`` base class.

A rule is one class: ``code`` and ``name`` from the catalogue (``pitstop.codes``), a message
template, whether its fix is safe or unsafe (as ruff marks them), and a docstring in four parts
(``What it does``, ``Why is this bad``, ``Example``, ``Use instead``) from which
``pitstop explain`` is generated."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pitstop.codes import CODES
from pitstop.lint.analysis import Module

FixSafety = Literal["safe", "unsafe"]


@dataclass(frozen=True)
class Edit:
    """Replace source characters ``[start, end)`` with ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    """Edits that repair one finding; ``safe`` ones run under ``--fix``, the others need ``--unsafe-fixes``."""

    description: str
    edits: tuple[Edit, ...]
    safe: bool


@dataclass
class Diagnostic:
    """One finding: code, message and position (1-based line, 1-based character column)."""

    code: str
    message: str
    line: int
    col: int
    end_line: int
    end_col: int
    fix: Fix | None = None
    path: str = ""
    severity: str | None = None  # when softer than the code's own (e.g. PIT501 where torch's default is unknown)

    @property
    def level(self) -> str:
        """The severity this finding is reported at."""
        return self.severity or CODES[self.code].severity


@dataclass
class Context:
    """One file being linted: its analysis, its lines, and the findings reported so far.
    ``project`` is the index of every file of the run (``pitstop.lint.project``), when there is one."""

    mod: Module
    path: str
    lines: list[str]
    project: Any = None  # pitstop.lint.project.View: the project as seen from this file
    offsets: list[int] = field(default_factory=list)  # character offset of each line start
    found: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        total, self.offsets = 0, []
        for line in self.lines:
            self.offsets.append(total)
            total += len(line)

    def char_col(self, line: int, byte_col: int) -> int:
        """0-based character column of an ast byte offset."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def offset(self, line: int, byte_col: int) -> int:
        return self.offsets[line - 1] + self.char_col(line, byte_col)

    def span(self, node: Any) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def text(self, node: Any) -> str:
        start, end = self.span(node)
        return self.mod.source[start:end]

    def report(self, code: str, node: Any, message: str, fix: Fix | None = None, severity: str | None = None
               ) -> None:
        self.found.append(Diagnostic(code, message, node.lineno, self.char_col(node.lineno, node.col_offset) + 1,
                                     node.end_lineno or node.lineno,
                                     self.char_col(node.end_lineno or node.lineno, node.end_col_offset or 0) + 1,
                                     fix, self.path, severity))

    def keyword_edit(self, call: ast.Call, keyword: str) -> Edit:
        """An edit adding ``keyword`` after the call's last argument (a trailing comma is kept)."""
        close = self.offset(call.end_lineno or call.lineno, call.end_col_offset or 0) - 1  # the ')'
        parts: list[Any] = [*call.args, *call.keywords]
        last = max(parts, key=lambda n: (n.end_lineno, n.end_col_offset), default=None)
        if last is None:
            return Edit(close, close, keyword)
        at = self.offset(last.end_lineno, last.end_col_offset)
        rest = self.mod.source[at:close]
        if rest.strip().startswith(","):
            return Edit(at + rest.index(",") + 1, at + rest.index(",") + 1, f" {keyword},")
        return Edit(at, at, f", {keyword}")


class Rule:
    """Base of every static rule. Subclasses set the class attributes and override ``check``,
    which reports through ``self.report``."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, as in the catalogue
    message: ClassVar[str]  # the main message template (str.format fields)
    variants: ClassVar[dict[str, str]] = {}  # other message templates, by key
    fix: ClassVar[FixSafety | None] = None  # the fixes it offers, if any

    def check(self, ctx: Context) -> None:
        """Report this rule's findings in ``ctx``."""
        raise NotImplementedError

    def report(self, ctx: Context, node: ast.AST, fix: Fix | None = None, variant: str = "",
               severity: str | None = None, **fields: object) -> None:
        template = self.variants[variant] if variant else self.message
        ctx.report(self.code, node, template.format(**fields), fix, severity)

    def make_fix(self, description: str, *edits: Edit) -> Fix:
        """A fix with this rule's safety."""
        if self.fix is None:
            raise TypeError(f"{type(self).__name__} declares no fix (set fix = 'safe' or 'unsafe')")
        return Fix(description, edits, self.fix == "safe")


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def is_const(node: ast.AST | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value
