"""PIT601 gradcheck-low-precision."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import Module, target_names, walk_local
from pitstop.lint.rules.base import Context, Rule, keyword

_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "full", "tensor", "randn_like", "rand_like", "linspace",
              "arange", "as_tensor"}


class GradcheckLowPrecision(Rule):
    """What it does:
        Finds `gradcheck`/`gradgradcheck` called on an input created by a torch factory without a
        float64 dtype.

    Why is this bad:
        gradcheck compares analytical gradients with finite differences; in float32 the finite
        differences are too coarse, so correct gradients fail the check and wrong ones can pass.

    Example:
        x = torch.randn(4, requires_grad=True)
        gradcheck(fn, (x,))

    Use instead:
        x = torch.randn(4, dtype=torch.float64, requires_grad=True)
        gradcheck(fn, (x,))
    """

    code = "PIT601"
    name = "gradcheck-low-precision"
    message = "{fn}() on a float32 input (`{arg}`): finite differences need dtype=torch.float64"

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        for call in mod.calls:
            q = mod.qualname(call.func) or ""
            if q.rsplit(".", 1)[-1] not in ("gradcheck", "gradgradcheck") or not q.startswith("torch.autograd"):
                continue
            if len(call.args) < 2:
                continue
            created = _tensor_origins(mod.enclosing_function(call))
            inputs = call.args[1]
            elements = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
            for el in elements:
                origin = created.get(el.id) if isinstance(el, ast.Name) else el if isinstance(el, ast.Call) else None
                if origin is not None and low_precision(origin, mod):
                    self.report(ctx, call, fn=q.rsplit(".", 1)[-1], arg=ctx.text(el))
                    break


def _tensor_origins(scope: ast.AST) -> dict[str, ast.Call]:
    found = {}
    for n in walk_local(scope):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for t in n.targets:
                for name in target_names(t):
                    found[name] = n.value
    return found


def low_precision(call: ast.Call, mod: Module) -> bool:
    """A torch factory call (possibly followed by .requires_grad_()) without a float64 dtype."""
    node: ast.AST = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("requires_grad_", "float", "to", "double"):
        if node.func.attr == "double" or (node.func.attr == "to" and any(
                "float64" in ast.unparse(a) or "double" in ast.unparse(a) for a in node.args)):
            return False
        if node.func.attr == "float":
            return True
        node = node.func.value
    if not isinstance(node, ast.Call):
        return False
    q = mod.qualname(node.func) or ""
    if not (q.startswith("torch.") and q.rsplit(".", 1)[-1] in _FACTORIES):
        return False
    dtype = keyword(node, "dtype")
    if dtype is None:
        if q.endswith(".tensor") or q.endswith(".as_tensor"):
            return bool(node.args) and any(isinstance(c, ast.Constant) and isinstance(c.value, float)
                                           for c in ast.walk(node.args[0]))
        return True
    text = ast.unparse(dtype.value)
    return "float64" not in text and "double" not in text
