"""Which graph a differentiated value belongs to: the forward calls and graph-attached assignments it
is computed from inside one scope (a loop body or a function), followed back through the assignments
that reach it. Two backward calls share a graph when their sources meet; ``retain_graph=True`` is
needed only then (the multi-loss pattern), not when a later backward differentiates a new forward."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import (
    DETACHING,
    NUMBER_FUNCS,
    SAFE_ATTRS,
    Module,
    backward_targets,
    dotted,
    target_names,
)
from pitstop.lint.graph import NO_GRAPH_METHODS, GraphNames, is_forward
from pitstop.lint.tree import children

Pos = tuple[int, int]
_MAX_DEPTH = 12  # assignment chains followed back; deeper ones are cut (a conservative answer)


def _pos(node: ast.AST) -> Pos:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


class Sources:
    """The assignments of one scope, in source order, and the graph sources an expression reaches."""

    def __init__(self, scope: ast.AST, mod: Module) -> None:
        self.mod, self.scope = mod, scope
        self.graph = GraphNames(scope, mod)
        fn = scope if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else mod.enclosing_function(scope)
        args = fn.args if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        self.params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} if args else set()
        self.defs: dict[str, list[ast.Assign | ast.AugAssign | ast.AnnAssign]] = {}  # name -> its bindings, in order
        stmts: list[ast.Assign | ast.AugAssign | ast.AnnAssign] = [
            n for n in mod.body(scope) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))]
        for a in sorted(stmts, key=_pos):
            targets = a.targets if isinstance(a, ast.Assign) else [a.target]
            for t in targets:
                for name in target_names(t):
                    self.defs.setdefault(name, []).append(a)

    def of_call(self, call: ast.Call) -> set[int] | None:
        """Sources of what a backward call differentiates (None when nothing is known)."""
        found: set[int] = set()
        for target in backward_targets(call, self.mod):
            found |= self.of(target, _pos(call), 0)
        return found or None

    def of(self, expr: ast.AST, at: Pos, depth: int) -> set[int]:
        """ids of forward calls and graph-attached assignments ``expr`` is computed from."""
        if depth > _MAX_DEPTH:
            return set()
        if isinstance(expr, ast.Name):
            return self._name(expr.id, at, depth)
        if isinstance(expr, ast.Call):
            f = expr.func
            if isinstance(f, ast.Attribute) and (f.attr in DETACHING or f.attr in NO_GRAPH_METHODS):
                return set()
            if isinstance(f, ast.Name) and f.id in NUMBER_FUNCS:
                return set()
            found = {id(expr)} if is_forward(expr, self.mod) or self.graph.model_call(expr) \
                or self._maybe_forward(expr) else set()
            if isinstance(f, ast.Attribute):
                found |= self.of(f.value, at, depth + 1)
            for a in [*expr.args, *(k.value for k in expr.keywords)]:
                found |= self.of(a, at, depth + 1)
            return found
        if isinstance(expr, ast.Attribute):
            return set() if expr.attr in SAFE_ATTRS else self.of(expr.value, at, depth + 1)
        if isinstance(expr, (ast.Constant, ast.Compare, ast.JoinedStr, ast.Lambda)):
            return set()
        found = set()
        for child in children(expr):
            if isinstance(child, ast.expr):
                found |= self.of(child, at, depth + 1)
        return found

    def _maybe_forward(self, call: ast.Call) -> bool:
        """A call of something handed in or held on ``self`` (``disc(x)``, ``self.value(s)``): it may
        be a model even when not named like one. Not torch or numpy, a class, or a plain function."""
        name = dotted(call.func)
        if not name or name in NUMBER_FUNCS or name in self.mod.functions:
            return False
        if (self.mod.qualname(call.func) or "").split(".")[0] in ("torch", "numpy", "np", "math", "random"):
            return False
        if name.rsplit(".", 1)[-1][:1].isupper():
            return False
        parts = name.split(".")
        views = self.mod.view.models if self.mod.view is not None else set()
        # ``disc(x)`` (a parameter called) or ``self.value(s)`` (a held module called), not a method of
        # something held (``self.memory.sample(n)``: a replay buffer hands out data)
        return (len(parts) == 1 and name in self.params) or (len(parts) == 2 and parts[0] == "self") \
            or name in views

    def _name(self, name: str, at: Pos, depth: int) -> set[int]:
        before = [a for a in self.defs.get(name, ()) if _pos(a) < at]
        if not before:
            return set()  # bound outside the scope: data, a parameter or a carried state
        a = before[-1]
        if self.mod.under_no_grad(a, self.scope) is not None:
            return set()
        value = a.value
        if value is None:
            return set()
        found = self.of(value, _pos(a), depth + 1)
        if isinstance(a, ast.AugAssign):
            found |= self._name(name, _pos(a), depth + 1)  # loss += term: the earlier terms too
        if found or self.graph.carries(value):
            found.add(id(a))
        return found


def _branch_of(mod: Module, node: ast.AST) -> dict[int, str]:
    """For each ``if`` around ``node`` (inside its function): which branch holds it."""
    found: dict[int, str] = {}
    cur, parent = node, mod.parents.get(id(node))
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(parent, ast.If):
            found[id(parent)] = "body" if any(cur is s for s in parent.body) else \
                "orelse" if any(cur is s for s in parent.orelse) else "test"
        cur, parent = parent, mod.parents.get(id(parent))
    return found


def exclusive(mod: Module, a: ast.AST, b: ast.AST) -> bool:
    """``a`` and ``b`` sit in different branches of one ``if``: they never run in the same pass."""
    ba, bb = _branch_of(mod, a), _branch_of(mod, b)
    return any(k in bb and bb[k] != v and "test" not in (v, bb[k]) for k, v in ba.items())


def in_comprehension(mod: Module, node: ast.AST) -> bool:
    """``[loss.backward() for loss in losses]``: a loop of its own."""
    cur = mod.parents.get(id(node))
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return True
        cur = mod.parents.get(id(cur))
    return False


def shares_graph(sources: Sources, first: ast.Call, later: ast.Call) -> bool:
    """Whether ``later`` differentiates (part of) the graph ``first`` retained. When either side's
    sources are unknown, assume it does (a retain that may be needed is not reported)."""
    if exclusive(sources.mod, first, later):
        return False
    a, b = sources.of_call(first), sources.of_call(later)
    if a is None or b is None:
        return True
    return bool(a & b)
