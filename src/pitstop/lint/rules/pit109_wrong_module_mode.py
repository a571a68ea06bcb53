"""PIT109 wrong-module-mode."""

from __future__ import annotations

import ast
from typing import ClassVar

from pitstop.lint.analysis import EVAL_NAME, Module, is_backward, is_step, method_calls, walk_local
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import eval_calls, forwards, train_calls, training_loops


class WrongModuleMode(Rule):
    """What it does:
        Finds `.eval()` in a training loop (directly or in a helper it calls) with no `.train()` in
        the loop; and an evaluation function (named eval/validate/test/predict/...) with forward
        passes, no backward and no `.eval()`, in a file that never calls `.eval()`.

    Why is this bad:
        In eval mode dropout is off and batch-norm stops updating its statistics, so training
        quietly changes; in train mode evaluation is noisy and updates batch-norm statistics with
        test data.

    Example:
        model.eval()
        evaluate(model)
        for x, y in loader:  # still in eval mode
            ...
            opt.step()

    Use instead:
        model.eval()
        evaluate(model)
        model.train()
        for x, y in loader:
            ...
            opt.step()
    """

    code = "PIT109"
    name = "wrong-module-mode"
    message = "`{call}` switches to eval mode inside the training loop and nothing switches back: the next " \
              "iterations train in eval mode (call model.train() at the start of each iteration)"
    variants: ClassVar[dict[str, str]] = {
        "no-eval": "`{fn}` evaluates without model.eval(): dropout stays active and batch-norm uses batch "
                   "statistics",
    }

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        seen: set[int] = set()
        for loop, _ in training_loops(mod):
            if id(loop) in seen or not any(is_step(n, mod) for n in walk_local(loop)):
                continue
            evals = [c for c in method_calls(loop, "eval") if not c.args]
            where = evals[0] if evals else _calls_eval_helper(loop, mod)
            if where is not None and not train_calls(loop):
                seen.add(id(loop))
                self.report(ctx, where, call=ctx.text(where))
        if any(isinstance(c.func, ast.Attribute) and c.func.attr == "eval" and not c.args for c in mod.calls):
            return  # the file sets eval mode somewhere: callers are assumed to handle it
        for fn in mod.functions.values():
            if EVAL_NAME.search(fn.name) and forwards(fn, mod) and not any(is_backward(n) for n in walk_local(fn)):
                self.report(ctx, fn, variant="no-eval", fn=fn.name)


def _calls_eval_helper(loop: ast.AST, mod: Module) -> ast.Call | None:
    """A call in the loop to a local function that sets a module to eval mode."""
    for n in walk_local(loop):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in mod.functions:
            fn = mod.functions[n.func.id]
            if eval_calls(fn) and not train_calls(fn):
                return n
    return None
