"""PIT601 gradcheck-low-precision."""

from __future__ import annotations

import ast
import re

from pitstop.lint.analysis import Module, walk_local
from pitstop.lint.rules.base import Context, Rule, keyword
from pitstop.lint.tree import walk

_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "full", "tensor", "randn_like", "rand_like", "linspace",
              "arange", "as_tensor"}


class GradcheckLowPrecision(Rule):
    """What it does:
        Finds `gradcheck`/`gradgradcheck` called on an input whose dtype is known to be below
        float64: created by a torch factory without a dtype or with float32/16, followed through
        the tuples and names it is passed in, `.to(...)`, `.float()`, `Variable(...)`,
        `torch.from_numpy` of a numpy `astype(np.float32)` array and local helper functions.
        Inputs whose dtype cannot be told (a parameter nobody passes) are left alone.

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
        module_env: Env | None = None
        for call in mod.calls:
            q = mod.qualname(call.func) or ""
            if q.rsplit(".", 1)[-1] not in ("gradcheck", "gradgradcheck") or not q.startswith("torch.autograd"):
                continue
            inputs = call.args[1] if len(call.args) > 1 else getattr(keyword(call, "inputs"), "value", None)
            if inputs is None:
                continue
            module_env = _env(mod.tree, {}) if module_env is None else module_env
            scope = mod.enclosing_function(call)
            env = _env(scope, module_env) if scope is not mod.tree else module_env
            for el, el_env in _elements(inputs, env):
                if Dtypes(mod).of(el, el_env) == "low":
                    self.report(ctx, call, fn=q.rsplit(".", 1)[-1], arg=ctx.text(el))
                    break


Env = dict[str, tuple[ast.AST, "Env"]]  # name -> (what it was bound to, the scope that binds it)


def _env(scope: ast.AST, outer: Env) -> Env:
    """What each name was last bound to in the scope (in source order); ``a, b = f()`` binds
    ``f()[0]`` and ``f()[1]``."""
    env: Env = dict(outer)
    for n in sorted((n for n in walk_local(scope) if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
        for t in n.targets:
            if isinstance(t, ast.Name):  # x = x.cuda(): the x it reads is the one bound before
                reads_itself = any(isinstance(x, ast.Name) and x.id == t.id for x in walk(n.value))
                env[t.id] = (n.value, dict(env) if reads_itself and len(env) < 400 else env)  # bounded copies
            elif isinstance(t, (ast.Tuple, ast.List)):
                for k, a in enumerate(t.elts):
                    if isinstance(a, ast.Name):
                        if isinstance(n.value, (ast.Tuple, ast.List)) and len(n.value.elts) == len(t.elts):
                            env[a.id] = (n.value.elts[k], env)
                        else:
                            env[a.id] = (ast.Subscript(n.value, ast.Constant(k)), env)
    return env


def _elements(node: ast.AST, env: Env, depth: int = 0) -> list[tuple[ast.AST, Env]]:
    """The tensors an inputs expression stands for: tuple/list elements, names followed to what
    they were bound to."""
    if depth > 4:
        return []
    if isinstance(node, ast.Name) and node.id in env and isinstance(env[node.id][0], (ast.Tuple, ast.List)):
        return _elements(*env[node.id], depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [e for el in node.elts for e in _elements(el, env, depth + 1)]
    return [(node, env)]


def _dtype_text(node: ast.AST) -> str | None:
    """"low" for float32/16 written out, "high" for float64, None when it cannot be told."""
    text = ast.unparse(node)
    if "float64" in text or "double" in text or re.search(r"\bf8\b", text):
        return "high"
    if re.search(r"float(32|16)?\b|half|bfloat16|single|\bf4\b", text):
        return "low"
    return None


class Dtypes:
    """The floating dtype an expression's tensor has, followed through names, tuples, local
    helper functions (their parameters bound to the caller's arguments), ``torch.from_numpy``,
    numpy's ``astype`` and torch's conversions."""

    def __init__(self, mod: Module) -> None:
        self.mod = mod

    def of(self, node: ast.AST, env: Env, depth: int = 0) -> str | None:
        if depth > 40:  # a bound on the chase (names, helpers), not a cycle guard alone
            return None
        if isinstance(node, ast.Name):
            return self.of(*env[node.id], depth + 1) if node.id in env else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            returned = self.returned(node.value, env, depth)
            if returned is not None and isinstance(returned[0], (ast.Tuple, ast.List)) \
                    and node.slice.value < len(returned[0].elts):
                return self.of(returned[0].elts[node.slice.value], returned[1], depth + 1)
            return None
        return self.call(node, env, depth) if isinstance(node, ast.Call) else None

    def call(self, node: ast.Call, env: Env, depth: int) -> str | None:
        f = node.func
        if isinstance(f, ast.Attribute):
            if f.attr in ("requires_grad_", "detach", "clone", "contiguous", "cpu", "cuda", "requires_grad"):
                return self.of(f.value, env, depth + 1)
            if f.attr == "double":
                return "high"
            if f.attr in ("float", "half", "bfloat16"):
                return "low"
            if f.attr in ("to", "type", "astype"):
                for a in [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]:
                    if (found := _dtype_text(a)) is not None:
                        return found
                return self.of(f.value, env, depth + 1) if f.attr != "astype" else None
        q = self.mod.qualname(f) or ""
        last = q.rsplit(".", 1)[-1]
        if q.endswith("autograd.Variable") or q in ("torch.autograd.variable.Variable", "torch.from_numpy"):
            return self.of(node.args[0], env, depth + 1) if node.args else None
        if q.startswith(("numpy.", "np.")):
            dtype = keyword(node, "dtype")
            return _dtype_text(dtype.value) if dtype else ("low" if last in ("float32", "float16") else None)
        if q.startswith("torch.") and last in _FACTORIES:
            dtype = keyword(node, "dtype")
            if dtype is not None:
                return _dtype_text(dtype.value) or self.of(dtype.value, env, depth + 1)
            if last in ("tensor", "as_tensor"):
                if node.args and any(isinstance(c, ast.Constant) and isinstance(c.value, float)
                                     for c in walk(node.args[0])):
                    return "low"
                return self.of(node.args[0], env, depth + 1) if node.args else None
            return None if last.endswith("_like") else "low"  # randn_like(x) takes x's dtype
        returned = self.returned(node, env, depth)
        return self.of(*returned, depth + 1) if returned is not None else None

    def returned(self, call: ast.Call, env: Env, depth: int) -> tuple[ast.AST, Env] | None:
        """What a local helper returns, in its own scope with its parameters bound to the call's arguments."""
        if not isinstance(call.func, ast.Name) or call.func.id not in self.mod.functions or depth > 40:
            return None
        fn = self.mod.functions[call.func.id]
        returns = [n for n in walk_local(fn) if isinstance(n, ast.Return) and n.value is not None]
        if len(returns) != 1:
            return None
        inner: Env = {k: v for k, v in env.items()}
        params = [a.arg for a in fn.args.args]
        for k, a in enumerate(call.args[:len(params)]):
            inner[params[k]] = (a, env)
        for kw in call.keywords:
            if kw.arg in params:
                inner[kw.arg] = (kw.value, env)
        return returns[0].value, _env(fn, inner)  # type: ignore[return-value]
