"""Walking a syntax tree quickly: ``ast.iter_child_nodes`` and ``ast.walk`` without their cost.

The standard walkers look at every field of every node through two nested generators, and yield the
``Load``/``Store``/``Del`` context object of every name, attribute and subscript: about a third of
all the nodes a walk meets, and nothing a rule matches on (rules read ``node.ctx`` directly). Here
each node type's fields that can hold a node are listed once, context and plain-value fields left
out, and the children come back as a list in the standard order. The lint analysis spends most of
its walking time in these two functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

# fields that hold a context object, or a plain value (identifier, number, string, flag): never a node to visit
_LEAF_FIELDS = frozenset({"ctx", "id", "attr", "name", "arg", "asname", "module", "level", "is_async", "conversion",
                          "simple", "kind", "type_comment", "tag", "rest", "kwd_attrs"})
_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}
_AST = ast.AST


def _fields(t: type) -> tuple[str, ...]:
    found = _FIELDS[t] = tuple(f for f in t._fields if f not in _LEAF_FIELDS)  # type: ignore[attr-defined]
    return found


def children(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without the context objects, in the same order."""
    t = type(node)
    fields = _FIELDS.get(t)
    if fields is None:
        fields = _fields(t)
    out: list[ast.AST] = []
    for f in fields:
        v = getattr(node, f, None)
        if v is None:
            continue
        if type(v) is list:
            for item in v:
                if isinstance(item, _AST):
                    out.append(item)
        elif isinstance(v, _AST):
            out.append(v)
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)`` (breadth first, ``node`` itself first) without the context objects."""
    todo = [node]
    i = 0
    while i < len(todo):
        n = todo[i]
        i += 1
        yield n
        todo.extend(children(n))


def walk_local(node: ast.AST, into_defs: bool = False) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested function/class definitions (unless ``into_defs``)
    or lambdas; depth first, ``node`` itself left out."""
    stack = children(node)
    while stack:
        n = stack.pop()
        yield n
        if not into_defs and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(children(n))
