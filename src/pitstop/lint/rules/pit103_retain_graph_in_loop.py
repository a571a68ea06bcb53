"""PIT103 retain-graph-in-loop."""

from __future__ import annotations

import ast
from typing import ClassVar

from pitstop.lint.analysis import Module, dotted, target_names, walk_local
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
    }

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        if not trains(mod):
            return
        for loop, calls in training_loops(mod):
            if innermost_loop(mod, calls[0]) is not loop:
                continue
            retained = [c for c in calls if is_const(getattr(keyword(c, "retain_graph"), "value", None), True)]
            if retained and len(calls) == 1:
                self.report(ctx, retained[0])
            self.carried_state(ctx, loop)

    def carried_state(self, ctx: Context, loop: ast.AST) -> None:
        """``out, h = model(x, h)`` in a training loop without ``h = h.detach()``."""
        for n in walk_local(loop):
            if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)):
                continue
            targets = {name for t in n.targets for name in target_names(t)}
            args = {name for a in [*n.value.args, *(k.value for k in n.value.keywords)] for name in target_names(a)}
            carried = sorted(targets & args)
            if not carried or any(_detaches(loop, name, ctx.mod) for name in carried):
                continue
            self.report(ctx, n, variant="carried", names=", ".join(carried))


def _detaches(loop: ast.AST, name: str, mod: Module) -> bool:
    for n in walk_local(loop, into_defs=False):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("detach_",) \
                and dotted(n.func.value) == name:
            return True
        if isinstance(n, ast.Assign) and any(name in target_names(t) for t in n.targets):
            text = ast.unparse(n.value)
            if "detach" in text or "repackage" in text or "zeros" in text or "init_hidden" in text or ".data" in text:
                return True
    return False
