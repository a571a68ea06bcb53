"""PIT101 stale-gradients."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import Module, clears_grads, is_backward, is_step, walk_local
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import innermost_loop


class StaleGradients(Rule):
    """What it does:
        Finds a loop that runs `backward()` and an optimizer `step()` but where nothing clears
        gradients (`zero_grad()`, `p.grad = None`, `.grad.zero_()`, also in a local helper it calls
        or an LBFGS closure it passes). Accumulation with the step under a condition is fine.

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

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        if not mod.trains:
            return
        reported: set[int] = set()
        for step in (n for n in mod.calls if is_step(n, mod)):
            loop = innermost_loop(mod, step)
            if loop is None or id(loop) in reported:
                continue
            if not any(is_backward(n) for n in walk_local(loop)) and not _passes_closure(step, mod):
                continue
            if clears_grads(loop, mod):
                continue
            reported.add(id(loop))
            self.report(ctx, step, step=ctx.text(step))


def _passes_closure(step: ast.Call, mod: Module) -> bool:
    return any(isinstance(a, ast.Name) and a.id in mod.functions for a in step.args)
