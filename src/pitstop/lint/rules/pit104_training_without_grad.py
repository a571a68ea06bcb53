"""PIT104 training-without-grad."""

from __future__ import annotations

import ast
from typing import ClassVar

from pitstop.lint.analysis import Module, backward_targets, is_backward, target_names, walk_local
from pitstop.lint.flow import Flow
from pitstop.lint.graph import GraphNames, is_forward
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import training_loops, trains
from pitstop.lint.tree import walk


class TrainingWithoutGrad(Rule):
    """What it does:
        Finds the loss of a training loop computed, or `backward()` run, under `torch.no_grad()` or
        `torch.inference_mode()` (a `with` block or a decorator); and a model run under no_grad on
        a graph-attached input (a GAN's discriminator on the generator's output) whose result
        feeds the loss, which cuts the gradient to the model that made the input.

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
    variants: ClassVar[dict[str, str]] = {
        "cut": "`{fn}(...)` runs under {how} on a graph-attached input and its result feeds the loss: no gradient "
               "flows back through it, so the model that made its input learns nothing from that term",
    }

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        if not trains(mod):
            return
        for loop, calls in training_loops(mod):
            for n in sorted((n for n in walk_local(loop) if isinstance(n, (ast.Assign, ast.Call))),
                            key=lambda n: (n.lineno, n.col_offset)):
                what = None
                if isinstance(n, ast.Assign) and _reaches_backward(n, loop, calls, mod):
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
            self.graph_cut(ctx, loop)

    def graph_cut(self, ctx: Context, loop: ast.AST) -> None:
        """``with no_grad(): pred = disc(fake)`` where ``fake`` came from a forward with autograd
        on and ``pred`` feeds the loss: the term gives the first model no gradient."""
        mod = ctx.mod
        blocks = [w for w in mod.body(loop) if isinstance(w, (ast.With, ast.AsyncWith))
                  and any(mod.is_no_grad(i.context_expr) for i in w.items)]
        if not blocks:
            return
        graph = GraphNames(loop, mod)
        flow = Flow(mod.enclosing_function(loop), mod)
        for block in blocks:
            for n in walk(block):
                if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and is_forward(n.value, mod)):
                    continue
                if any(graph.carries(a, block) for a in n.value.args) and any(
                        x in flow.live for t in n.targets for x in target_names(t)):
                    self.report(ctx, n.value, variant="cut", fn=ctx.text(n.value.func),
                                how=ast.unparse(block.items[0].context_expr))


def _reaches_backward(assign: ast.Assign, loop: ast.AST, calls: list[ast.Call], mod: Module) -> bool:
    """Whether a backward of the loop differentiates the value this assignment binds: the last
    binding of its name before the backward (or, wrapping round the loop, the last one in the
    loop when none comes before it). A validation loss reusing the training loss's name does not."""
    names = {x for t in assign.targets for x in target_names(t)}
    pos = (assign.lineno, assign.col_offset)
    for call in calls:
        if not is_backward(call):
            continue
        for t in backward_targets(call, mod):
            if not (isinstance(t, ast.Name) and t.id in names):
                continue
            at = (call.lineno, call.col_offset)
            binds = sorted((a.lineno, a.col_offset) for a in walk_local(loop) if isinstance(a, ast.Assign)
                           and t.id in {x for tt in a.targets for x in target_names(tt)})
            before = [b for b in binds if b < at]
            if (before and before[-1] == pos) or (not before and binds and binds[-1] == pos):
                return True
    return False
