"""PIT201 inference-with-grad."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import EVAL_LOADER, EVAL_NAME, is_backward, walk_local
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import forwards


class InferenceWithGrad(Rule):
    """What it does:
        Finds forward passes in evaluation functions (named eval/validate/test/predict/...) or in
        loops over `val`/`test`/`eval` loaders, with no backward, outside `no_grad`/`inference_mode`.

    Why is this bad:
        Autograd records a graph for every forward and keeps the activations it would need for a
        backward that never comes: evaluation is slower and uses far more memory.

    Example:
        model.eval()
        preds = model(x)

    Use instead:
        model.eval()
        with torch.inference_mode():
            preds = model(x)
    """

    code = "PIT201"
    name = "inference-with-grad"
    message = "{what} runs `{fn}(...)` with autograd recording a graph nothing uses: wrap it in " \
              "torch.inference_mode() (or torch.no_grad())"

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        for fn in mod.functions.values():
            if EVAL_NAME.search(fn.name) and not any(is_backward(n) for n in walk_local(fn)):
                self.grad_forwards(ctx, fn, f"`{fn.name}`")
        for loop in mod.loop_nodes:
            if not isinstance(loop, (ast.For, ast.AsyncFor)) or not EVAL_LOADER.search(ctx.text(loop.iter)):
                continue
            owner = mod.enclosing_function(loop)
            if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)) and EVAL_NAME.search(owner.name):
                continue  # reported with its function
            if not any(is_backward(n) for n in walk_local(loop)):
                self.grad_forwards(ctx, loop, f"the loop over `{ctx.text(loop.iter)}`")

    def grad_forwards(self, ctx: Context, scope: ast.AST, what: str) -> None:
        for call in forwards(scope, ctx.mod):
            if ctx.mod.under_no_grad(call) is None:
                self.report(ctx, call, what=what, fn=ctx.text(call.func))
                return
