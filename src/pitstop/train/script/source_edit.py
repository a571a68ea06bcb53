"""Mechanical edits of Python source, located by the AST and applied to the text: a keyword set on
a call, lines inserted before a statement or after the imports, statements wrapped in a ``with``.
Each returns the new text or raises ``NotMechanical`` with the reason (the edit is then described
for the user to make by hand, never guessed). Positions are the AST's (columns in UTF-8 bytes)."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


class NotMechanical(Exception):
    """The edit cannot be made safely by rewriting text; the message says why and what to do."""


@dataclass(frozen=True)
class Where:
    """A place in a file: its path and 1-based line (and the line its function starts on)."""

    file: str
    line: int
    first_line: int = 0  # the enclosing function's co_firstlineno (0: the module)
    function: str = ""  # its name ("<module>" or "": the module)


def set_keyword(text: str, line: int, name: str, value: str, callee: str | None = None) -> str:
    """The call at ``line`` (whose callee ends with ``callee`` when given) with ``name=value``:
    replaced when present, added otherwise; a ``**mapping`` argument becomes ``**{**mapping, name: value}``
    (the keyword may be in it)."""
    call = _call_at(ast.parse(text), line, callee)
    lines = text.splitlines(True)
    existing = next((k for k in call.keywords if k.arg == name), None)
    if existing is not None:
        return _replace(lines, existing.value, value)
    spread = next((k for k in call.keywords if k.arg is None), None)
    if spread is not None:
        inner = _segment(lines, spread.value)
        return _replace(lines, spread.value, f"{{**{inner}, {name!r}: {value}}}")
    args: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if args:
        last = args[-1]
        return _insert(lines, last.end_lineno or last.lineno, last.end_col_offset or 0, f", {name}={value}")
    return _insert(lines, call.end_lineno or call.lineno, (call.end_col_offset or 1) - 1, f"{name}={value}")


def statement_start(text: str, where: Where) -> int:
    """The first line of the statement of ``where``'s function body that contains its line: the
    outermost loop that holds it, or the statement itself, looking inside ``if``/``with``/``try``
    blocks (the model of a script whose loop runs under ``if __name__ == "__main__":`` is bound inside
    that block: a line before the whole block would run before it exists)."""
    body = _body_of(ast.parse(text), where)
    stmt = _containing(body, where.line)
    if stmt is None:
        raise NotMechanical(f"no statement at line {where.line} of {where.file}")
    while not isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
        inner = next((s for block in _blocks(stmt) if (s := _containing(block, where.line)) is not None), None)
        if inner is None or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            break
        stmt = inner
    return _first(stmt)


def _containing(body: list[ast.stmt], line: int) -> ast.stmt | None:
    return next((s for s in body if _first(s) <= line <= (s.end_lineno or s.lineno)), None)


def wrapped_start(text: str, forward: Where, backward: Where) -> int:
    """The first line ``wrap`` would indent."""
    first, _ = _span(_body_of(ast.parse(text), forward), forward.line, backward.line)
    return _first(first)


def insert_before(text: str, where: Where, new_lines: list[str]) -> str:
    """``new_lines`` before the statement of ``where``'s function body that contains its line, at
    that statement's indentation."""
    lines = text.splitlines(True)
    start = statement_start(text, where)
    indent = _indent(lines[start - 1])
    return "".join(lines[:start - 1] + [f"{indent}{new}\n" for new in new_lines] + lines[start - 1:])


def insert_after_imports(text: str, new_lines: list[str], needs_torch: bool = True) -> str:
    """``new_lines`` after the first run of top-level imports (``import torch`` first when the
    module does not bind ``torch``)."""
    tree = ast.parse(text)
    body = tree.body
    index = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    last = None
    for stmt in body[index:]:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            last = stmt
        elif last is not None:
            break
    extra = [] if not needs_torch or binds_torch(tree) else ["import torch"]
    lines = text.splitlines(True)
    at = (last.end_lineno or last.lineno) if last is not None else (body[0].end_lineno or 0) if index else 0
    return "".join(lines[:at] + [f"{new}\n" for new in [*extra, *new_lines]] + lines[at:])


def deepest_shared(first: list[dict[str, Any]], second: list[dict[str, Any]]
                   ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The deepest frame two stacks (``site_of`` lists, outermost first) share: that frame's site in
    each (their lines differ); None when they share none."""
    common = None
    for a, b in zip(first, second, strict=False):
        if (a["file"], a["first_line"], a["function"]) != (b["file"], b["first_line"], b["function"]):
            break
        common = (a, b)
    return common


def binds_torch(tree: ast.Module) -> bool:
    """Whether the module binds the name ``torch`` at its top level (``import torch``)."""
    return any(isinstance(s, ast.Import) and any(a.name == "torch" and a.asname is None for a in s.names)
               for s in tree.body)


def wrap(text: str, forward: Where, backward: Where, header: str) -> str:
    """The statements from the one that leads to the forward up to the one before the backward, in
    the innermost block holding both, indented under ``header`` (``with torch.autocast(...):``)."""
    tree = ast.parse(text)
    body = _body_of(tree, forward)
    first, last = _span(body, forward.line, backward.line)
    lines = text.splitlines(True)
    start, end = _first(first), last.end_lineno or last.lineno
    _no_multiline_strings(text, start, end)
    unit = "\t" if _indent(lines[start - 1]).startswith("\t") else "    "
    indent = _indent(lines[start - 1])
    moved = [(unit + ln if ln.strip() else ln) for ln in lines[start - 1:end]]
    return "".join([*lines[:start - 1], f"{indent}{header}\n", *moved, *lines[end:]])


# -- locating -----------------------------------------------------------------------------------

def _call_at(tree: ast.Module, line: int, callee: str | None) -> ast.Call:
    """The call covering ``line`` (its callee named ``callee`` when given): the innermost such."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    if callee:  # "A|B": either name
        calls = [c for c in calls if _callee_name(c).endswith(tuple(callee.split("|")))]
    if not calls:
        raise NotMechanical(f"no call{f' to {callee}' if callee else ''} at line {line}")
    starting = [c for c in calls if c.lineno == line] or calls
    return max(starting, key=lambda c: (c.lineno, c.col_offset))


def _callee_name(call: ast.Call) -> str:
    try:
        return ast.unparse(call.func)
    except Exception:  # an exotic callee: never matched by name
        return ""


def _body_of(tree: ast.Module, where: Where) -> list[ast.stmt]:
    """The body of ``where``'s function (the module's for ``<module>``, or when not found)."""
    if where.first_line <= 0 or where.function in ("", "<module>"):
        return tree.body
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == where.function:
            starts = [node.lineno, *(d.lineno for d in node.decorator_list)]
            if where.first_line in starts:
                return node.body
    return tree.body


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists inside a compound statement."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(stmt, "handlers", []):
        yield handler.body
    for case in getattr(stmt, "cases", []):
        yield case.body


def _span(body: list[ast.stmt], line_f: int, line_b: int) -> tuple[ast.stmt, ast.stmt]:
    """First and last statement to wrap: in the innermost block holding both lines in different statements."""
    def holds(s: ast.stmt, line: int) -> bool:
        return _first(s) <= line <= (s.end_lineno or s.lineno)

    sf = next((i for i, s in enumerate(body) if holds(s, line_f)), None)
    sb = next((i for i, s in enumerate(body) if holds(s, line_b)), None)
    if sf is None or sb is None:
        raise NotMechanical(f"lines {line_f} and {line_b} are not in one block")
    if sf == sb:
        inner = next((b for b in _blocks(body[sf]) if any(holds(s, line_f) for s in b)
                      and any(holds(s, line_b) for s in b)), None)
        if inner is None:
            raise NotMechanical(f"the forward (line {line_f}) and the backward (line {line_b}) are one statement; "
                                "write the loss on its own line (loss = ...), then loss.backward()")
        return _span(inner, line_f, line_b)
    if sf > sb:
        raise NotMechanical(f"the backward (line {line_b}) comes before the forward (line {line_f})")
    return body[sf], body[sb - 1]


def _first(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _no_multiline_strings(text: str, start: int, end: int) -> None:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        raise NotMechanical("the file does not tokenize") from None
    for tok in tokens:
        if tok.type == tokenize.STRING and tok.start[0] != tok.end[0] and start <= tok.start[0] <= end:
            raise NotMechanical(f"a string spans lines {tok.start[0]}-{tok.end[0]}: re-indenting would change it")


# -- text ---------------------------------------------------------------------------------------

def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _offset(lines: list[str], line: int, col: int) -> tuple[int, int]:
    """(line index, character column) of an AST position (its column counts UTF-8 bytes)."""
    text = lines[line - 1]
    return line - 1, len(text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))


def _segment(lines: list[str], node: ast.expr) -> str:
    (l1, c1), (l2, c2) = _offset(lines, node.lineno, node.col_offset), \
        _offset(lines, node.end_lineno or node.lineno, node.end_col_offset or 0)
    if l1 == l2:
        return lines[l1][c1:c2]
    return lines[l1][c1:] + "".join(lines[l1 + 1:l2]) + lines[l2][:c2]


def _replace(lines: list[str], node: ast.expr, new: str) -> str:
    (l1, c1), (l2, c2) = _offset(lines, node.lineno, node.col_offset), \
        _offset(lines, node.end_lineno or node.lineno, node.end_col_offset or 0)
    return "".join([*lines[:l1], lines[l1][:c1] + new + lines[l2][c2:], *lines[l2 + 1:]])


def _insert(lines: list[str], line: int, col: int, new: str) -> str:
    li, ci = _offset(lines, line, col)
    return "".join([*lines[:li], lines[li][:ci] + new + lines[li][ci:], *lines[li + 1:]])
