"""PIT101 stale-gradients."""

from __future__ import annotations

import ast
from typing import ClassVar

from pitstop.lint.analysis import Module, block_of, clears_grads, dotted, is_backward, is_step, walk_local
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import helper_backwards, innermost_loop, trains
from pitstop.lint.tree import walk


class StaleGradients(Rule):
    """What it does:
        Finds, per optimizer, a loop that runs `backward()` and that optimizer's `step()` but where
        nothing clears its gradients (`opt.zero_grad()`, `model.zero_grad()` on the model it
        optimises, `p.grad = None`, `.grad.zero_()`, also in a helper it calls or an LBFGS closure
        it passes): a GAN's second optimizer never zeroed is found. Accumulation with the step under
        a condition is fine; loops under `torch.distributed.autograd.context()` keep gradients in
        the context and are left alone.

    Why is this bad:
        backward() adds into .grad; without clearing, every step applies the sum of all earlier
        steps' gradients and training diverges or crawls.

    Example:
        for x, y in loader:
            loss = crit(model(x), y)
            loss.backward()
            opt.step()

    Use instead:
        for x, y in loader:
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
    """

    code = "PIT101"
    name = "stale-gradients"
    message = "`{step}` runs every iteration but gradients are never cleared in this loop: each step adds the " \
              "previous steps' gradients (call optimizer.zero_grad())"
    variants: ClassVar[dict[str, str]] = {
        "twice": "`{step}` steps a second time in the iteration after another backward with no zero_grad() since the "
                 "first step: the first step's gradients are applied again",
        "conditional": "`{step}` runs every iteration but its gradients are cleared only when `{condition}` (line "
                       "{line}): on the other iterations each step adds the previous steps' gradients (clear them "
                       "outside the condition, e.g. optimizer.zero_grad() at the top of the loop)",
    }

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        if not trains(mod):
            return
        reported: set[tuple[int, str]] = set()
        owners = _optimised_models(mod)
        helpers = {id(c) for c in helper_backwards(mod)}
        for step in (n for n in mod.calls if is_step(n, mod)):
            loop = innermost_loop(mod, step)
            opt = _optimizer(step)
            if loop is None or (id(loop), opt) in reported:
                continue
            if not any(is_backward(n) or id(n) in helpers for n in walk_local(loop)) \
                    and not _passes_closure(step, mod):
                continue
            if _in_dist_autograd(mod, loop):
                continue
            if not _cleared(loop, opt, owners, mod):
                reported.add((id(loop), opt))
                self.report(ctx, step, step=ctx.text(step))
            elif (guard := _only_under(loop, step, opt, owners, mod)) is not None:
                reported.add((id(loop), opt))
                self.report(ctx, step, variant="conditional", step=ctx.text(step), condition=ctx.text(guard.test),
                            line=guard.lineno)
            elif (again := _stepped_twice(loop, opt, owners, mod)) is not None:
                reported.add((id(loop), opt))
                self.report(ctx, again, variant="twice", step=ctx.text(again))


def _only_under(loop: ast.AST, step: ast.Call, opt: str, owners: dict[str, set[str]], mod: Module) -> ast.If | None:
    """The ``if`` that every clearing of ``opt``'s gradients in the loop sits under (a rank, a step
    modulo, a logging flag), when the step itself runs on every iteration; None when some path
    clears unconditionally (an ``if`` with a clearing in both branches counts as one), when the step
    is conditional too (accumulation), or when the clearing is in a function the loop defines."""
    cur = mod.parents.get(id(step))
    while cur is not None and cur is not loop:
        if isinstance(cur, (ast.If, ast.IfExp, ast.ExceptHandler, ast.match_case)):
            return None  # the step is conditional: accumulation, or a step skipped on purpose
        cur = mod.parents.get(id(cur))
    always, guard = _always_cleared(getattr(loop, "body", []), opt, owners, mod)
    return None if always else guard


def _always_cleared(stmts: list[ast.stmt], opt: str, owners: dict[str, set[str]], mod: Module,
                    ) -> tuple[bool, ast.If | None]:
    """Whether every path through ``stmts`` clears ``opt``'s gradients; if not, the outermost ``if``
    under which a clearing was found."""
    guard: ast.If | None = None
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            body, inner_b = _always_cleared(stmt.body, opt, owners, mod)
            orelse, inner_e = _always_cleared(stmt.orelse, opt, owners, mod)
            if body and orelse:
                return True, None
            if guard is None and (body or orelse or inner_b or inner_e):
                guard = stmt
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            body, inner = _always_cleared(stmt.body, opt, owners, mod)
            if body:
                return True, None
            guard = guard or inner
        elif isinstance(stmt, ast.Try):
            body, inner = _always_cleared(stmt.body + stmt.finalbody, opt, owners, mod)
            if body:
                return True, None
            guard = guard or inner
        elif isinstance(stmt, (ast.Match, ast.While)):
            if _cleared(stmt, opt, owners, mod):
                return False, guard  # a clearing in a match arm or a while: not judged here
        elif _cleared(stmt, opt, owners, mod):  # a statement, a nested for (a loop over optimizers), a def
            return True, None
    return False, guard


def _stepped_twice(loop: ast.AST, opt: str, owners: dict[str, set[str]], mod: Module) -> ast.Call | None:
    """A second ``opt.step()`` in the same iteration after a backward, with no clear since the
    first: it applies the first step's gradients again, added to the new ones."""
    calls = sorted((n for n in mod.body(loop) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    stepped = dirty = False
    block = None  # the statement list of the first step: a step in a branch that ends the iteration is not paired
    for n in calls:
        if is_step(n, mod) and _optimizer(n) == opt:
            here = _statement_list(mod, n)
            if dirty and here == block:
                return n
            stepped, dirty, block = True, False, here
        elif is_backward(n) and stepped:
            dirty = True
        elif isinstance(n.func, ast.Attribute) and n.func.attr == "zero_grad":
            recv = dotted(n.func.value) or ""
            if recv == opt or recv in owners.get(opt, ()) or _wraps(recv, opt) \
                    or not ("opt" in recv.lower() or recv in owners):
                stepped = dirty = False
        elif stepped and (clears_grads(ast.Expr(n), mod) or (mod.view is not None and mod.view.runs("zeroes", n))):
            stepped = dirty = False  # reset_grad(): a helper that clears every module's gradients
    return None


def _statement_list(mod: Module, call: ast.Call) -> int | None:
    """The statement list holding ``call``'s statement (``analysis.block_of``: ``scaler.step(opt)``
    under ``if use_amp:`` and ``opt.step()`` under its ``else:`` are in two lists, never run in the
    same iteration)."""
    stmt = next((a for a in mod.ancestors(call) if isinstance(a, ast.stmt)), None)
    block = block_of(mod.parents.get(id(stmt)), stmt) if stmt is not None else None
    return id(block) if block is not None else None


def _optimizer(step: ast.Call) -> str:
    """The optimizer a step call steps: ``opt.step()`` -> opt; ``scaler.step(opt)`` -> opt."""
    recv = dotted(step.func.value) or ""  # type: ignore[attr-defined]
    if "scaler" in recv.rsplit(".", 1)[-1].lower() and step.args:
        return dotted(step.args[0]) or recv
    return recv


def _wraps(recv: str, opt: str) -> bool:
    """One optimizer is an attribute of the other: a wrapper's inner optimizer (``opt.optimizer.zero_grad()``
    before ``opt.step()``, a Noam schedule's) or the wrapper itself (``sched.zero_grad()`` before
    ``sched.optimizer.step()``): the same gradients."""
    return bool(recv and opt) and (recv.startswith(opt + ".") or opt.startswith(recv + "."))


def _optimised_models(mod: Module) -> dict[str, set[str]]:
    """optimizer name -> the modules whose ``.parameters()`` it was built on."""
    found: dict[str, set[str]] = {}
    for call in mod.calls:
        parent = mod.parents.get(id(call))
        q = mod.qualname(call.func) or ""
        if isinstance(parent, ast.Assign) and parent.value is call and q.startswith("torch.optim."):
            models = {d for n in walk(call) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                      and n.func.attr in ("parameters", "named_parameters") and (d := dotted(n.func.value))}
            for t in parent.targets:
                if (name := dotted(t)) and models:
                    found[name] = models
    return found


def _cleared(loop: ast.AST, opt: str, owners: dict[str, set[str]], mod: Module) -> bool:
    """Whether something in the loop clears ``opt``'s gradients: its own zero_grad(), its model's,
    a zero_grad() on something not known to belong to another optimizer, or a generic clear."""
    others = {o for o in mod.optimizers | set(owners) if o != opt}
    other_models = {m for o, ms in owners.items() if o != opt for m in ms} - owners.get(opt, set())
    for n in walk_local(loop, into_defs=True):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "zero_grad":
            recv = dotted(n.func.value) or ""
            if recv == opt or recv in owners.get(opt, ()) or _wraps(recv, opt):
                return True
            named_opt = "opt" in recv.rsplit(".", 1)[-1].lower()
            if recv not in others and recv not in other_models and not (named_opt and opt and recv != opt):
                return True
    return _clears_otherwise(loop, mod)


def _clears_otherwise(loop: ast.AST, mod: Module) -> bool:
    """``p.grad = None``, ``.grad.zero_()``, or a helper that clears (zero_grad included)."""
    for n in walk_local(loop, into_defs=True):
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Attribute) and n.func.attr == "zero_grad"):
            if clears_grads(ast.Expr(n), mod):
                return True
            if mod.view is not None and mod.view.runs("zeroes", n):
                return True
        elif isinstance(n, (ast.Assign, ast.AnnAssign)) and clears_grads(ast.Module([n], []), mod):
            return True
    return False


def _dist_context(mod: Module, node: ast.AST) -> bool:
    """``with torch.distributed.autograd.context() as ...``: gradients live in the context."""
    return isinstance(node, (ast.With, ast.AsyncWith)) and any(
        (mod.qualname(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr) or "")
        .startswith("torch.distributed.autograd.context") for i in node.items)


def _in_dist_autograd(mod: Module, loop: ast.AST) -> bool:
    """The loop sits in, or holds, a distributed autograd context."""
    cur: ast.AST | None = loop
    while cur is not None:
        if _dist_context(mod, cur):
            return True
        cur = mod.parents.get(id(cur))
    return any(_dist_context(mod, n) for n in walk_local(loop))


def _passes_closure(step: ast.Call, mod: Module) -> bool:
    return any(isinstance(a, ast.Name) and a.id in mod.functions for a in step.args)
