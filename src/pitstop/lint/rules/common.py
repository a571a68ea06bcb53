"""Helpers the loop rules share: training loops, the innermost loop, eval()/train() calls and
forward passes."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import Module, is_backward, method_calls
from pitstop.lint.graph import is_forward
from pitstop.lint.rules.base import is_const


def training_loops(mod: Module) -> list[tuple[ast.AST, list[ast.Call]]]:
    """Loops that run backward (directly, in nested loops, or in a project function they call),
    with those calls, in source order."""
    by_loop: dict[int, tuple[ast.AST, list[ast.Call]]] = {}
    for call in [*mod.backwards, *helper_backwards(mod)]:
        for loop in mod.enclosing_loops(call):
            by_loop.setdefault(id(loop), (loop, []))[1].append(call)
    return sorted(by_loop.values(), key=lambda p: (p[0].lineno, p[0].col_offset))  # type: ignore[attr-defined]


def helper_backwards(mod: Module) -> list[ast.Call]:
    """Calls of project functions that run backward (transitively)."""
    view = mod.view
    if view is None:
        return []
    if view.helper_backwards is None:
        view.helper_backwards = [c for c in mod.calls if not is_backward(c) and view.runs("backward", c)]
    return view.helper_backwards


def trains(mod: Module) -> bool:
    """The file runs backward, itself or through a project function it calls."""
    return mod.trains or bool(helper_backwards(mod))


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
    """Calls under ``scope`` that are a model's forward pass (``analysis.is_forward``)."""
    return [n for n in mod.body(scope) if isinstance(n, ast.Call) and is_forward(n, mod)]
