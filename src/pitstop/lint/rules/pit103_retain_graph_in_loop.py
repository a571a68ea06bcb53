"""PIT103 retain-graph-in-loop."""

from __future__ import annotations

import ast
import re
from typing import ClassVar

from pitstop.lint.analysis import Module, backward_targets, dotted, is_backward, names_in, target_names, walk_local
from pitstop.lint.project_facts import fn_key
from pitstop.lint.reach import Sources, shares_graph
from pitstop.lint.rules.base import Context, Rule, is_const, keyword
from pitstop.lint.rules.common import innermost_loop, training_loops, trains


class RetainGraphInLoop(Rule):
    """What it does:
        Finds `backward(retain_graph=True)` as the only backward of a training loop, and a state
        passed into and returned from a call every iteration (`out, h = rnn(x, h)`) without
        `.detach()`.

    Why is this bad:
        A retained graph keeps every saved activation alive until the next step; a carried state
        chains each iteration's graph to all earlier ones, so memory and backward time grow every
        step (or backward fails with "backward through the graph a second time").

    Example:
        h = torch.zeros(1, 8)
        for x in chunks:
            out, h = rnn(x, h)
            loss = out.sum()
            loss.backward(retain_graph=True)

    Use instead:
        h = torch.zeros(1, 8)
        for x in chunks:
            h = h.detach()
            out, h = rnn(x, h)
            loss = out.sum()
            loss.backward()
    """

    code = "PIT103"
    name = "retain-graph-in-loop"
    message = "backward(retain_graph=True) runs every iteration but no second backward uses the graph: its saved " \
              "tensors are kept for nothing"
    variants: ClassVar[dict[str, str]] = {
        "carried": "`{names}` is carried from one iteration to the next without .detach(): each backward "
                   "reaches into every earlier step's graph (detach it at the start of the iteration)",
        "helper": "`{fn}` runs backward(retain_graph=True) and a loop calls it once per batch with no later "
                  "backward over that graph: its saved tensors are kept for nothing",
    }

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        if not trains(mod):
            return
        for loop, calls in training_loops(mod):
            for call in calls:
                if innermost_loop(mod, call) is loop and _retains(call) and self.retained_for_nothing(ctx, call, loop):
                    self.report(ctx, call)
            self.carried_state(ctx, loop)
        self.retained_by_helpers(ctx)

    def retained_for_nothing(self, ctx: Context, call: ast.Call, loop: ast.AST) -> bool:
        """No later backward in the iteration, and the graph is built anew in each iteration."""
        mod = ctx.mod
        for target in backward_targets(call, mod):
            d = dotted(target)
            if d is not None and not any(isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                                         and d in _bound(n) for n in walk_local(loop)):
                return False  # the same graph is differentiated again in the next iteration
        pos = (call.lineno, call.col_offset)
        sources: Sources | None = None
        for n in walk_local(loop):
            if not (isinstance(n, ast.Call) and (n.lineno, n.col_offset) > pos and n is not call):
                continue
            if mod.qualname(n.func) == "torch.autograd.grad" or (
                    not is_backward(n) and mod.view is not None and mod.view.runs("backward", n)):
                return False  # a gradient or a helper's backward: its graph is not followed here
            if is_backward(n):
                sources = sources or Sources(loop, mod)
                if shares_graph(sources, call, n):
                    return False  # the multi-loss pattern: a later backward over the same graph
        return True

    def retained_by_helpers(self, ctx: Context) -> None:
        """A function ending in backward(retain_graph=True) that a loop calls once per batch."""
        view = ctx.project
        if view is None or not view.project.retain_flagged:
            return
        for fn in ctx.mod.defs:
            fid = view.fn_id(fn_key(ctx.mod, fn))
            if fid is None or fid not in view.project.retain_flagged:
                continue
            where = view.project.files[fid[0]].functions[fid[1]].retain
            for call in ctx.mod.backwards:
                if (call.lineno, call.col_offset) in where:
                    self.report(ctx, call, variant="helper", fn=fid[1])

    def carried_state(self, ctx: Context, loop: ast.AST) -> None:
        """``out, h = model(x, h)`` in a training loop without ``h = h.detach()``."""
        for n in walk_local(loop):
            if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)) or not _stateful(n.value, ctx.mod):
                continue
            targets = {name for t in n.targets for name in target_names(t)}
            args = {name for a in [*n.value.args, *(k.value for k in n.value.keywords)] for name in target_names(a)}
            carried = sorted(targets & args) or _aliased(loop, n, targets, args)
            carried = [c for c in carried if _may_hold_graph(n, c, ctx.mod)]
            if not carried or any(_reset(loop, name, n, ctx.mod) for name in carried):
                continue
            self.report(ctx, n, variant="carried", names=", ".join(carried))


def _retains(call: ast.Call) -> bool:
    return is_const(getattr(keyword(call, "retain_graph"), "value", None), True)


def _bound(n: ast.Assign | ast.AugAssign | ast.AnnAssign) -> set[str]:
    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
    return {d for t in targets for d in [dotted(t), *target_names(t)] if d}


_STATEFUL = re.compile(r"rnn|lstm|gru|cell|model|net|coder|layer|step", re.I)


def _stateful(call: ast.Call, mod: Module) -> bool:
    """A call that may carry a graph-attached state: a model-like callee (``rnn(x, h)``, also a
    method of one: ``agent.policy_net.get_action(s, h)``) or a project function returning a graph."""
    parts = (dotted(call.func) or "").split(".")
    name = parts[-1]
    return bool(_STATEFUL.search(name)) or any(_STATEFUL.search(p) for p in parts[1:-1]) \
        or (mod.view is not None and mod.view.returns_graph(call))


def _may_hold_graph(carrier: ast.Assign, name: str, mod: Module) -> bool:
    """Not when ``name`` gets a place of a project function's tuple that never holds a graph
    (``_, train_state = run_epoch(...)`` whose ``train_state`` is a counter object)."""
    target = carrier.targets[0]
    if mod.view is None or len(carrier.targets) != 1 or not isinstance(target, ast.Tuple) \
            or not isinstance(carrier.value, ast.Call):
        return True
    positions = mod.view.graph_positions(carrier.value)
    if positions is None:
        return True
    return any(k in positions for k, e in enumerate(target.elts) if name in target_names(e))


def _aliased(loop: ast.AST, carrier: ast.Assign, targets: set[str], args: set[str]) -> list[str]:
    """``h_in = h_out`` earlier in the iteration, then ``a, h_out = net(x, h_in)``: the state is
    carried through the alias."""
    found = []
    for n in walk_local(loop):
        if isinstance(n, ast.Assign) and (n.lineno, n.col_offset) < (carrier.lineno, carrier.col_offset) \
                and isinstance(n.value, ast.Name) and n.value.id in targets \
                and args & {x for t in n.targets for x in target_names(t)}:
            found.append(n.value.id)
    return sorted(set(found))


def _reset(loop: ast.AST, name: str, carrier: ast.Assign, mod: Module) -> bool:
    """The state is cut from the previous iteration: a loop target (rebound from the loader each
    iteration), assigned anew elsewhere in the loop (``h = h.detach()``, ``h = init_hidden()``), or
    detached in place (``h.detach_()``, also on its elements)."""
    cur: ast.AST | None = carrier
    while cur is not None and cur is not mod.parents.get(id(loop)):
        if isinstance(cur, (ast.For, ast.AsyncFor)) and name in target_names(cur.target):
            return True
        cur = mod.parents.get(id(cur))
    for n in walk_local(loop):
        if isinstance(n, ast.Assign) and n is not carrier and name in {x for t in n.targets for x in target_names(t)}:
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "detach_":
            receiver = names_in(n.func.value)
            owner = mod.parents.get(id(n))
            while owner is not None and owner is not loop and not isinstance(owner, (ast.For, ast.AsyncFor)):
                owner = mod.parents.get(id(owner))
            if name in receiver or (isinstance(owner, (ast.For, ast.AsyncFor)) and name in names_in(owner.iter)):
                return True
        if isinstance(n, ast.Call) and name in {a.id for a in n.args if isinstance(a, ast.Name)} \
                and re.search(r"detach|repackage", dotted(n.func) or "", re.I):
            return True
    return False
