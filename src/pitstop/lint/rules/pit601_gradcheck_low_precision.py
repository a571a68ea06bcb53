"""PIT601 gradcheck-low-precision."""

from __future__ import annotations

import ast
import re

from pitstop.lint.analysis import Module, walk_local
from pitstop.lint.rules.base import Context, Rule, keyword

_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "full", "tensor", "randn_like", "rand_like", "linspace",
              "arange", "as_tensor"}


class GradcheckLowPrecision(Rule):
    """What it does:
        Finds `gradcheck`/`gradgradcheck` called on an input whose dtype is known to be below
        float64: created by a torch factory without a dtype or with float32/16 (also through the
        tuples and names it is passed in, `.to(...)`, `.float()` and `Variable(...)`). Inputs whose
        dtype cannot be told (a parameter, a helper's result) are left alone.

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
        module_level: dict[str, ast.AST] | None = None
        for call in mod.calls:
            q = mod.qualname(call.func) or ""
            if q.rsplit(".", 1)[-1] not in ("gradcheck", "gradgradcheck") or not q.startswith("torch.autograd"):
                continue
            inputs = call.args[1] if len(call.args) > 1 else getattr(keyword(call, "inputs"), "value", None)
            if inputs is None:
                continue
            module_level = _origins(mod.tree) if module_level is None else module_level
            created = {**module_level, **_origins(mod.enclosing_function(call))}
            for el in _elements(inputs, created):
                if low_precision(el, mod, created):
                    self.report(ctx, call, fn=q.rsplit(".", 1)[-1], arg=ctx.text(el))
                    break


def _origins(scope: ast.AST) -> dict[str, ast.AST]:
    """What each name was last bound to in the scope (in source order)."""
    found: dict[str, ast.AST] = {}
    assigns = sorted((n for n in walk_local(scope) if isinstance(n, ast.Assign)), key=lambda n: n.lineno)
    for n in assigns:
        for t in n.targets:
            if isinstance(t, ast.Name):
                found[t.id] = n.value
            elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(n.value, (ast.Tuple, ast.List)) \
                    and len(t.elts) == len(n.value.elts):
                for a, b in zip(t.elts, n.value.elts, strict=True):
                    if isinstance(a, ast.Name):
                        found[a.id] = b
    return found


def _elements(node: ast.AST, created: dict[str, ast.AST], depth: int = 0) -> list[ast.AST]:
    """The tensors an inputs expression stands for: tuple/list elements, names followed to what
    they were bound to."""
    if depth > 4:
        return []
    if isinstance(node, ast.Name) and node.id in created and isinstance(created[node.id], (ast.Tuple, ast.List)):
        return _elements(created[node.id], created, depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [e for el in node.elts for e in _elements(el, created, depth + 1)]
    return [node]


def _dtype_low(node: ast.AST, created: dict[str, ast.AST]) -> bool | None:
    """True for a float32/16 dtype, False for float64, None when it cannot be told."""
    if isinstance(node, ast.Name) and node.id in created:
        node = created[node.id]
    text = ast.unparse(node)
    if "float64" in text or "double" in text:
        return False
    if re.search(r"float(32|16)?\b|half|bfloat16", text) and "float64" not in text:
        return True
    return None


def low_precision(node: ast.AST, mod: Module, created: dict[str, ast.AST] | None = None, depth: int = 0) -> bool:
    """A tensor built by a torch factory (possibly followed by .requires_grad_(), .to(), wrapped in
    Variable) whose dtype is known to be below float64."""
    created = created or {}
    if depth > 4:
        return False
    if isinstance(node, ast.Name):
        return node.id in created and low_precision(created[node.id], mod, created, depth + 1)
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr in ("requires_grad_", "detach", "clone", "contiguous", "cpu", "cuda"):
        return low_precision(f.value, mod, created, depth + 1)
    if isinstance(f, ast.Attribute) and f.attr in ("double",):
        return False
    if isinstance(f, ast.Attribute) and f.attr in ("float", "half", "bfloat16"):
        return True
    if isinstance(f, ast.Attribute) and f.attr in ("to", "type"):
        for a in [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]:
            low = _dtype_low(a, created)
            if low is not None:
                return low
        return low_precision(f.value, mod, created, depth + 1)
    q = mod.qualname(f) or ""
    if q.endswith("autograd.Variable") or q == "torch.autograd.variable.Variable":
        return bool(node.args) and low_precision(node.args[0], mod, created, depth + 1)
    if not (q.startswith("torch.") and q.rsplit(".", 1)[-1] in _FACTORIES):
        return False
    dtype = keyword(node, "dtype")
    if dtype is None:
        if q.endswith(".tensor") or q.endswith(".as_tensor"):
            return bool(node.args) and any(isinstance(c, ast.Constant) and isinstance(c.value, float)
                                           for c in ast.walk(node.args[0]))
        return not q.endswith("_like")  # randn_like(x) takes x's dtype
    return bool(_dtype_low(dtype.value, created))
