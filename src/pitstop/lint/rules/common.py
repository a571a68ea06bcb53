"""Helpers the loop rules share: training loops, the innermost loop, eval()/train() calls and
forward passes (also those made one project call away)."""

from __future__ import annotations

import ast
import re

from pitstop.lint.analysis import EVAL_NAME, Module, dotted, is_backward, method_calls, mode_switch, walk_local
from pitstop.lint.graph import is_forward
from pitstop.lint.project_facts import Fn, Site
from pitstop.lint.rules.base import Context
from pitstop.lint.shapes import UNKNOWN as _UNKNOWN
from pitstop.lint.shapes import constant
from pitstop.lint.tree import walk


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
    """``m.eval()`` and ``m.train(False)`` under ``scope``."""
    return [c for c in walk_local(scope, True) if isinstance(c, ast.Call) and mode_switch(c) == "eval"]


def train_calls(scope: ast.AST) -> list[ast.Call]:
    """``m.train()``, ``m.train(True)`` and ``m.train(flag)`` (not known to be False) under ``scope``."""
    return [c for c in method_calls(scope, "train", into_defs=True) if mode_switch(c) != "eval"]


def forwards(scope: ast.AST, mod: Module) -> list[ast.Call]:
    """Calls under ``scope`` that are a model's forward pass (``analysis.is_forward``)."""
    return [n for n in mod.body(scope) if isinstance(n, ast.Call) and is_forward(n, mod)]


def evaluating_sites(mod: Module, fn: ast.AST, info: Fn, sites: list[tuple[int, Site]]) -> list[tuple[int, Site]]:
    """The calls of a function that trains or evaluates depending on a parameter which evaluate:
    the constants they pass skip every backward (``iteration(data, train=False)``,
    ``run_epoch(cross_valid=True)``, ``fit(phase="validation")`` where ``if phase == "train":``
    guards the backward), or they hand it a validation loader or phase."""
    backwards = [n for n in mod.body(fn) if isinstance(n, ast.Call) and is_backward(n)]
    found = []
    for i, site in sites:
        given = _given(info, site, fn)
        runs = [_runs(mod, fn, b, given) for b in backwards]
        if backwards and all(r is False for r in runs):
            found.append((i, site))  # the constants it passes skip every backward
        elif not any(r is True for r in runs) and (site.evaluates or set(info.gates) & set(site.off)):
            found.append((i, site))  # not decided by its constants: a validation loader or phase, a gate off
    return found


def evaluation_side(mod: Module, fn: ast.AST, info: Fn, site: Site, calls: list[ast.Call]) -> list[ast.Call]:
    """Of ``calls`` (forwards in ``fn``), those that run when ``site`` calls it (not known to be skipped by
    the constants it passes: ``training=False`` skips the ``if training:`` branch), the first of each
    innermost ``if`` branch (TranAD's ``backprop``: one evaluation forward per model family)."""
    given = _given(info, site, fn)
    found: list[ast.Call] = []
    groups: set[tuple[int, bool]] = set()
    for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        if _runs(mod, fn, c, given) is False:
            continue
        child: ast.AST = c
        cur = mod.parents.get(id(c))
        while cur is not None and cur is not fn and not isinstance(cur, ast.If):
            child, cur = cur, mod.parents.get(id(cur))
        group = (id(cur), any(child is b for b in getattr(cur, "body", ())))
        if group not in groups:
            groups.add(group)
            found.append(c)
    return found


def _given(info: Fn, site: Site, fn: ast.AST | None = None) -> dict[str, object]:
    """What a call passes, by parameter name (``("#1", False)``: the second positional), and the defaults
    of ``fn`` for the parameters it leaves out (none when it unpacks ``*args`` or ``**kwargs``)."""
    given = {info.params[int(k[1:])] if k.startswith("#") and int(k[1:]) < len(info.params) else k: v
             for k, v in site.consts}
    a = getattr(fn, "args", None)
    if a is None or "**" in given:
        return given
    positional = [*a.posonlyargs, *a.args]
    defaults = zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True)
    keyword_defaults = ((p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None)
    return {p.arg: constant(d) for p, d in [*defaults, *keyword_defaults]} | given


def _runs(mod: Module, fn: ast.AST, node: ast.AST, given: dict[str, object]) -> bool | None:
    """Whether ``node`` inside ``fn`` runs with the parameters ``given`` (constants a caller passed):
    False when an ``if`` around it is known to take the other branch, True when every ``if``
    around it is known to take its branch, None when that is not known."""
    child, cur = node, mod.parents.get(id(node))
    known = True
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If):
            value = _truth(cur.test, given)
            if value is None:
                known = False
            elif value != any(child is s for s in cur.body):
                return False
        child, cur = cur, mod.parents.get(id(cur))
    return True if known else None




def _truth(test: ast.expr, given: dict[str, object]) -> bool | None:
    """The truth of an ``if`` test over parameters with known constant values, when it is known."""
    value = _value(test, given)
    return None if value is _UNKNOWN else bool(value)


def _value(e: ast.expr, given: dict[str, object]) -> object:
    if isinstance(e, (ast.Constant, ast.Attribute)):
        return constant(e)  # ``mode == ModeType.TRAIN``: a member, by name
    if isinstance(e, ast.Name):
        return given.get(e.id, _UNKNOWN)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        v = _value(e.operand, given)
        return _UNKNOWN if v is _UNKNOWN else not v
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        items = [_value(x, given) for x in e.elts]
        return _UNKNOWN if any(x is _UNKNOWN for x in items) else tuple(items)
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
        a, b, op = _value(e.left, given), _value(e.comparators[0], given), e.ops[0]
        if a is _UNKNOWN or b is _UNKNOWN:
            return _UNKNOWN
        if isinstance(op, (ast.Eq, ast.Is)):
            return a == b
        if isinstance(op, (ast.NotEq, ast.IsNot)):
            return a != b
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(b, (tuple, str)):
            if isinstance(b, str) and not isinstance(a, str):
                return _UNKNOWN  # 1 in "xyz" would raise
            return (a in b) == isinstance(op, ast.In)
        return _UNKNOWN
    if isinstance(e, ast.BoolOp):
        values = [_value(v, given) for v in e.values]
        if isinstance(e.op, ast.And):
            if any(v is not _UNKNOWN and not v for v in values):
                return False
            return _UNKNOWN if any(v is _UNKNOWN for v in values) else True
        if any(v is not _UNKNOWN and v for v in values):
            return True
        return _UNKNOWN if any(v is _UNKNOWN for v in values) else False
    return _UNKNOWN


def helper_forwards(ctx: Context, scope: ast.AST) -> list[ast.Call]:
    """In an evaluation function by name (``sample``, ``evaluate``, ``predict``), the calls of project
    functions that return a graph-attached tensor and train nothing (``self.sample_generator(n)``,
    whose ``self.G(z)`` comes back): forwards made one call away. Only helpers some other caller trains
    on: one whose every caller drops its value is reported at its own forward."""
    view, name = ctx.project, getattr(scope, "name", "")
    if view is None:
        return []
    named = bool(EVAL_NAME.search(name) or _EVAL_FN.search(name))
    if not named and not any(isinstance(c, ast.Call) and mode_switch(c) == "eval" for c in ctx.mod.body(scope)):
        return []  # neither named for evaluation nor switching a model to eval(): the common case, decided cheaply
    found: list[ast.Call] = []
    for c in ctx.mod.body(scope):
        fid = view.callee(c) if isinstance(c, ast.Call) else None
        if isinstance(c, ast.Call) and fid is not None and (named or (_evaluating(ctx.mod, scope, c) and any(
                dotted(a) in view.models for a in c.args))) \
                and view.returns_graph(c) and not view.runs("backward", c) \
                and not view.runs("step", c) and any(s.result_used for _, s in view.project.sites_of(fid)):
            found.append(c)  # (a helper no caller uses is reported where it is)
    return found


def _evaluating(mod: Module, scope: ast.AST, call: ast.Call) -> bool:
    """``model.eval()`` last before ``call`` in its function, and no backward in its loop: the test pass
    of a function that trains and then tests (SR-GNN's ``train_test``, whose helper is given the model)."""
    at = (call.lineno, call.col_offset)
    switches = [c for c in mod.body(scope) if isinstance(c, ast.Call) and (c.lineno, c.col_offset) < at
                and mode_switch(c) is not None]
    loops = mod.enclosing_loops(call)
    return bool(switches) and mode_switch(max(switches, key=lambda c: (c.lineno, c.col_offset))) == "eval" \
        and bool(loops) and not any(isinstance(n, ast.Call) and is_backward(n) for n in mod.body(loops[0]))


_EVAL_FN = re.compile(r"^(test|testing|sample|samples|generate|translate)$", re.I)


def main_block(mod: Module, node: ast.AST) -> ast.If | None:
    """The module-level ``if __name__ == "__main__":`` statement that holds ``node``, if one does."""
    line = getattr(node, "lineno", None)
    return None if line is None else next(
        (s for s in mod.tree.body if isinstance(s, ast.If) and s.lineno <= line <= (s.end_lineno or 0)
         and "__name__" in {n.id for n in walk(s.test) if isinstance(n, ast.Name)}), None)
