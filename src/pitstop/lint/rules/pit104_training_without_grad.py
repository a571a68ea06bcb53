"""PIT104 training-without-grad."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import backward_targets, is_backward, target_names, walk_local
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import training_loops, trains


class TrainingWithoutGrad(Rule):
    """What it does:
        Finds the loss of a training loop computed, or `backward()` run, under `torch.no_grad()` or
        `torch.inference_mode()` (a `with` block or a decorator).

    Why is this bad:
        With autograd off nothing is recorded: backward() fails with "element 0 of tensors does not
        require grad", or the step updates nothing and the model never learns.

    Example:
        with torch.no_grad():
            loss = crit(model(x), y)
        loss.backward()

    Use instead:
        loss = crit(model(x), y)
        loss.backward()
    """

    code = "PIT104"
    name = "training-without-grad"
    message = "{what} under {how}: autograd is off, nothing is learned"

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        if not trains(mod):
            return
        for loop, calls in training_loops(mod):
            losses = {t.id for c in calls for t in backward_targets(c, mod) if isinstance(t, ast.Name)}
            for n in sorted((n for n in walk_local(loop) if isinstance(n, (ast.Assign, ast.Call))),
                            key=lambda n: (n.lineno, n.col_offset)):
                what = None
                if isinstance(n, ast.Assign) and losses & {x for t in n.targets for x in target_names(t)}:
                    what = "the loss is computed"
                elif is_backward(n):
                    what = "backward() runs"
                if what is None:
                    continue
                off = mod.under_no_grad(n)
                if off is not None:
                    how = ast.unparse(off.items[0].context_expr) if isinstance(off, (ast.With, ast.AsyncWith)) \
                        else "@" + ast.unparse(off)
                    self.report(ctx, n, what=what, how=how)
                    break
