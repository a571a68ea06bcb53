"""Helpers the loop rules share: training loops, the innermost loop, eval()/train() calls and
forward passes."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import GraphNames, Module, method_calls, walk_local
from pitstop.lint.rules.base import is_const


def training_loops(mod: Module) -> list[tuple[ast.AST, list[ast.Call]]]:
    """Loops that run backward (directly or in nested loops), with those backward calls, in
    source order."""
    by_loop: dict[int, tuple[ast.AST, list[ast.Call]]] = {}
    for call in mod.backwards:
        for loop in mod.enclosing_loops(call):
            by_loop.setdefault(id(loop), (loop, []))[1].append(call)
    return sorted(by_loop.values(), key=lambda p: (p[0].lineno, p[0].col_offset))  # type: ignore[attr-defined]


def innermost_loop(mod: Module, node: ast.AST, stop: ast.AST | None = None) -> ast.AST | None:
    cur = mod.parents.get(id(node))
    while cur is not None and cur is not stop and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            return cur
        cur = mod.parents.get(id(cur))
    return None


def eval_calls(scope: ast.AST) -> list[ast.Call]:
    return [c for c in method_calls(scope, "eval", into_defs=True) if not c.args]


def train_calls(scope: ast.AST) -> list[ast.Call]:
    return [c for c in method_calls(scope, "train", into_defs=True)
            if not c.args or not is_const(c.args[0], False)]


def forwards(scope: ast.AST, mod: Module) -> list[ast.Call]:
    """Calls under ``scope`` that look like a model's forward pass (not torch.nn.functional)."""
    g = GraphNames.__new__(GraphNames)
    g.mod = mod
    return [n for n in walk_local(scope) if isinstance(n, ast.Call) and GraphNames.model_call(g, n)
            and not (mod.qualname(n.func) or "").startswith("torch.nn.functional")]
