"""PIT602 unstable-logsumexp."""

from __future__ import annotations

import ast
from typing import ClassVar

from pitstop.lint.analysis import Module, dotted, walk_local
from pitstop.lint.rules.base import Context, Edit, Fix, Rule, keyword
from pitstop.lint.shapes import softmax_of
from pitstop.lint.tree import walk


class UnstableLogsumexp(Rule):
    """What it does:
        Finds `log(sum(exp(x)))`, `log(softmax(x))` and `log(sigmoid(x))` / `log(1 - sigmoid(x))`
        written by hand, in their torch, method and `F.` spellings, also across statements (a softmax
        or sigmoid gathered, indexed or given an epsilon before the log) and through a local `log()`
        helper (an `exp(x - max)` shifted by hand and a sigmoid clamped first are left alone).

    Why is this bad:
        exp(x) overflows to inf for large x and softmax underflows to 0 for very negative logits, so
        the log becomes inf or -inf and the loss or its gradient turns NaN. A sigmoid is a two-term
        softmax: log(sigmoid(x)) is -inf once it rounds to 0 (float32 logits below about -88), and
        log(1 - sigmoid(x)) once it rounds to 1 (past about 17); F.logsigmoid(x) and F.logsigmoid(-x)
        are exact there.

    Example:
        torch.log(torch.exp(x).sum(-1))

    Use instead:
        torch.logsumexp(x, -1)
    """

    code = "PIT602"
    name = "unstable-logsumexp"
    message = "log(sum(exp(x))) overflows for large x: use torch.logsumexp"
    variants: ClassVar[dict[str, str]] = {
        "softmax": "log(softmax(x)) underflows to -inf: use torch.log_softmax",
        "ratio": "log(exp(x) / sum(exp(...))) is a softmax written by hand: exp overflows for large x (fp16 past "
                 "11), use torch.log_softmax or F.cross_entropy on the logits",
        "sigmoid": "log({what}) is -inf once the sigmoid rounds to {edge} (float32 logits {at}): use {use}",
    }
    fix = "safe"

    def _sigmoid(self, ctx: Context, call: ast.Call, fix: Fix | None, complement: bool) -> None:
        if complement:
            self.report(ctx, call, fix, variant="sigmoid", what="1 - sigmoid(x)", edge="1", at="above about 17",
                        use="F.logsigmoid(-x)")
        else:
            self.report(ctx, call, fix, variant="sigmoid", what="sigmoid(x)", edge="0", at="below about -88",
                        use="F.logsigmoid(x)")

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        helpers = _log_helpers(mod)
        origins: dict[int, dict[str, ast.AST]] = {}
        for call in mod.calls:
            inner = _log_of(call, mod, helpers)
            if inner is None:
                continue
            scope = mod.enclosing_function(call)
            if id(scope) not in origins:
                origins[id(scope)] = _origins(scope)
            traced = _trace(inner, origins[id(scope)])
            if _ratio_softmax(traced, origins[id(scope)], mod):  # InfoNCE by hand: -log(exp(pos) / exp(all).sum(1))
                self.report(ctx, call, variant="ratio")
                continue
            if isinstance(traced, ast.Name):  # a parameter (or unknown): what every caller passes, if one softmax
                traced = _passed(mod, scope, traced.id, origins) or traced
            if traced is not inner:  # through names, indexing, gather or an epsilon: no rewrite offered
                if _exp_sums(traced, mod) or _summed_exp(traced, origins[id(scope)], mod):
                    self.report(ctx, call)
                elif softmax_of(traced, mod) is not None:
                    self.report(ctx, call, variant="softmax")
                elif (sig := _sigmoid_term(traced, mod)) is not None:
                    self._sigmoid(ctx, call, None, sig[1])
                elif _project_softmax(traced, mod):  # probs = self.decode(x) ... log(probs.topk(k)[0])
                    self.report(ctx, call, variant="softmax")  # or prob = self.actor.pi(s), in another file
                continue
            exp_sum = _sum_of_exp(inner, mod)
            if exp_sum is not None and isinstance(exp_sum[0], ast.BinOp) and isinstance(exp_sum[0].op, ast.Sub):
                continue  # exp(x - max): shifted by hand, the stable form
            if exp_sum is None and (_exp_sums(inner, mod) or _summed_exp(inner, origins[id(scope)], mod)):
                self.report(ctx, call)  # log(exp(a) + exp(b)): no single rewrite
                continue
            if exp_sum is not None:
                x, dim, keepdim = exp_sum
                fix = None
                if dim is not None:
                    kd = f", keepdim={ctx.text(keepdim)}" if keepdim is not None else ""
                    fix = self.make_fix("rewrite to torch.logsumexp", Edit(
                        *ctx.span(call), f"torch.logsumexp({ctx.text(x)}, dim={ctx.text(dim)}{kd})"))
                self.report(ctx, call, fix)
                continue
            soft = softmax_of(inner, mod)
            if soft is not None:
                x, sdim = soft
                fix = None
                if sdim is not None:
                    fix = self.make_fix("rewrite to torch.log_softmax", Edit(
                        *ctx.span(call), f"torch.log_softmax({ctx.text(x)}, dim={ctx.text(sdim)})"))
                self.report(ctx, call, fix, variant="softmax")
                continue
            sig = _sigmoid_term(inner, mod)
            if sig is None and (sig := _sigmoid_term(inner, mod, origins[id(scope)])) is not None:
                self._sigmoid(ctx, call, None, sig[1])  # (1 - p).log(), p made above
            elif sig is not None:
                x, complement = sig
                arg = f"-({ctx.text(x)})" if complement else ctx.text(x)
                fix = self.make_fix("rewrite to torch.nn.functional.logsigmoid", Edit(
                    *ctx.span(call), f"torch.nn.functional.logsigmoid({arg})"))
                self._sigmoid(ctx, call, fix, complement)


_SIGMOID_MODULES = ("torch.nn.Sigmoid", "torch.nn.modules.activation.Sigmoid")


def _sigmoid_of(node: ast.AST, mod: Module) -> ast.AST | None:
    """x for torch.sigmoid(x), F.sigmoid(x), x.sigmoid() or a constructed nn.Sigmoid() called on x."""
    if not isinstance(node, ast.Call):
        return None
    q = mod.qualname(node.func) or ""
    if q in ("torch.sigmoid", "torch.nn.functional.sigmoid") and len(node.args) == 1:
        return node.args[0]
    if isinstance(node.func, ast.Attribute) and node.func.attr == "sigmoid" and not q and not node.args:
        return node.func.value
    if mod.constructed.get(dotted(node.func) or "") in _SIGMOID_MODULES and len(node.args) == 1:
        return node.args[0]
    return None


def _sigmoid_term(node: ast.AST, mod: Module, origins: dict[str, ast.AST] | None = None) -> tuple[ast.AST, bool] | None:
    """(x, False) for sigmoid(x), (x, True) for ``1 - sigmoid(x)``: what a log of it underflows on
    (with ``origins``, the subtracted name followed to its value: ``p = x.sigmoid()``, ``(1 - p).log()``).
    A clamp around the sigmoid is not looked through (``log(p.clamp(eps, 1 - eps))`` is bounded)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Constant) \
            and node.left.value == 1:
        x = _sigmoid_of(_trace(node.right, origins) if origins is not None else node.right, mod)
        return (x, True) if x is not None else None
    x = _sigmoid_of(node, mod)
    return (x, False) if x is not None else None


def _log_of(call: ast.Call, mod: Module, helpers: frozenset[str] = frozenset()) -> ast.AST | None:
    """The argument of torch.log(X), X.log() or a local helper that returns torch.log of its argument."""
    if (mod.qualname(call.func) or "") == "torch.log" and len(call.args) == 1 and not call.keywords:
        return call.args[0]
    if isinstance(call.func, ast.Name) and call.func.id in helpers and len(call.args) == 1:
        return call.args[0]
    if isinstance(call.func, ast.Attribute) and call.func.attr == "log" and not call.args and not call.keywords \
            and mod.qualname(call.func) is None:
        return call.func.value
    return None


def _exp_arg(node: ast.AST, mod: Module) -> ast.AST | None:
    if isinstance(node, ast.Call):
        if (mod.qualname(node.func) or "") == "torch.exp" and len(node.args) == 1:
            return node.args[0]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "exp" and not node.args \
                and mod.qualname(node.func) is None:
            return node.func.value
    return None


def _arg(node: ast.Call, args: list[ast.AST], index: int, name: str) -> ast.AST | None:
    if len(args) > index:
        return args[index]
    kw = keyword(node, name)
    return kw.value if kw else None


def _sum_of_exp(node: ast.AST, mod: Module) -> tuple[ast.AST, ast.AST | None, ast.AST | None] | None:
    """(x, dim, keepdim) for torch.sum(torch.exp(x), dim) or x.exp().sum(dim)."""
    if not isinstance(node, ast.Call):
        return None
    args: list[ast.AST]
    if (mod.qualname(node.func) or "") == "torch.sum" and node.args:
        inner, args = node.args[0], list(node.args[1:])
    elif isinstance(node.func, ast.Attribute) and node.func.attr == "sum" and mod.qualname(node.func) is None:
        inner, args = node.func.value, list(node.args)
    else:
        return None
    x = _exp_arg(inner, mod)
    if x is None:
        return None
    return x, _arg(node, args, 0, "dim"), _arg(node, args, 1, "keepdim")




def _exp_like(node: ast.AST, origins: dict[str, ast.AST], mod: Module, depth: int = 0) -> bool:
    """An exp not shifted by hand, followed through names, indexing, ``.diag()``, a local
    ``f = lambda x: torch.exp(x / tau)`` and a mask multiplied in."""
    node = _trace(node, origins)
    if depth > 4:
        return False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("diag", "diagonal"):
        return _exp_like(node.func.value, origins, mod, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        helper = origins.get(node.func.id)
        body = helper.body if isinstance(helper, ast.Lambda) else None
        fn = mod.functions.get(node.func.id)
        if body is None and fn is not None and len(fn.body) == 1 and isinstance(fn.body[0], ast.Return):
            body = fn.body[0].value
        if body is not None:
            return _exp_like(body, {}, mod, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _exp_like(node.left, origins, mod, depth + 1) or _exp_like(node.right, origins, mod, depth + 1)
    x = _exp_arg(node, mod)
    return x is not None and not _shifted(_trace(x, origins))  # ``logits = dot - max`` bound above: shifted


def _summed_exp(node: ast.AST, origins: dict[str, ast.AST], mod: Module) -> bool:
    """``sum(exp(x) * mask, 0)``, also divided by a count (a Cox partial likelihood's risk set), its
    exp bound above and not shifted by hand: a logsumexp written out."""
    node = _trace(node, origins)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and not _exp_like(node.right, origins, mod):
        node = _trace(node.left, origins)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr != "sum":
        return False
    torch_sum = (mod.qualname(node.func) or "") == "torch.sum"
    if not torch_sum and mod.qualname(node.func) is not None:
        return False
    inner = node.args[0] if torch_sum and node.args else None if torch_sum else node.func.value
    return inner is not None and _exp_like(inner, origins, mod)


def _ratio_softmax(node: ast.AST, origins: dict[str, ast.AST], mod: Module) -> bool:
    """``exp(a) / (sum(exp(b)) [+ or - exp terms])``: a softmax written out, its log taken next."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)) or not _exp_like(node.left, origins, mod):
        return False
    terms: list[ast.AST] = []
    _terms(_trace(node.right, origins), terms)
    summed = False
    for t in terms:
        t = _trace(t, origins)
        torch_sum = isinstance(t, ast.Call) and (mod.qualname(t.func) or "") == "torch.sum" and bool(t.args)
        if isinstance(t, ast.Call) and (torch_sum or (
                isinstance(t.func, ast.Attribute) and t.func.attr == "sum" and mod.qualname(t.func) is None)):
            inner = t.args[0] if torch_sum else t.func.value  # type: ignore[attr-defined]
            if not _exp_like(inner, origins, mod):
                return False
            summed = True
        elif not _exp_like(t, origins, mod):
            return False
    return summed


def _terms(node: ast.AST, out: list[ast.AST]) -> None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        _terms(node.left, out)
        _terms(node.right, out)
    else:
        out.append(node)


def _log_helpers(mod: Module) -> frozenset[str]:
    """Local functions whose body is ``return torch.log(x [+ eps])`` of their one parameter."""
    found = set()
    for name, fn in mod.functions.items():
        if len(fn.body) == 1 and isinstance(fn.body[0], ast.Return) and isinstance(fn.body[0].value, ast.Call) \
                and len(fn.args.args) == 1:
            arg = _log_of(fn.body[0].value, mod)
            if arg is not None and fn.args.args[0].arg in {n.id for n in walk(arg) if isinstance(n, ast.Name)}:
                found.add(name)
    return frozenset(found)


_SELECTS = ("topk", "sort", "max", "min", "kthvalue")  # (values, indices): the values are the input's own


class _Origins(dict[str, ast.AST]):
    """Each name's last value in a scope, and every value it is given there in order: a name read at a line
    is followed to the value bound just before it (``log_loss = torch.sum(log_loss, 0) / n`` then
    ``torch.log(log_loss)``), to its last value when none is (a loop carries it, or a parameter)."""

    def __init__(self) -> None:
        super().__init__()
        self.binds: dict[str, list[tuple[int, ast.AST]]] = {}

    def bind(self, name: str, end: int, value: ast.AST) -> None:
        self[name] = value
        self.binds.setdefault(name, []).append((end, value))

    def at(self, name: ast.Name) -> ast.AST:
        before = [v for end, v in self.binds.get(name.id, ()) if end < name.lineno]
        return before[-1] if before else self[name.id]


def _origins(scope: ast.AST) -> _Origins:
    found = _Origins()
    for n in sorted((n for n in walk_local(scope) if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
        end = n.end_lineno or n.lineno
        for t in n.targets:
            if isinstance(t, ast.Name):
                found.bind(t.id, end, n.value)
            elif isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple) and len(t.elts) == len(n.value.elts):
                for a, v in zip(t.elts, n.value.elts, strict=True):
                    if isinstance(a, ast.Name):
                        found.bind(a.id, end, v)
            elif isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name) \
                    and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute) \
                    and n.value.func.attr in _SELECTS and n.value.args:
                found.bind(t.elts[0].id, end, n.value.func.value)  # best_probs, best_idx = probs.topk(k)
    return found


def _passed(mod: Module, fn: ast.AST, param: str, origins: dict[int, dict[str, ast.AST]]) -> ast.AST | None:
    """What the file's every call of ``fn`` passes for its parameter ``param``, traced in the caller
    (``self._best(dec_output, ...)`` where ``dec_output = self._decode(...)``), when all of them are
    one softmax (or one call of a function that returns one); None when any differs or none is found."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in fn.args.args]
    if param not in params:
        return None
    method = isinstance(mod.parents.get(id(fn)), ast.ClassDef) and params[:1] in (["self"], ["cls"])
    at = params.index(param) - (1 if method else 0)
    found: ast.AST | None = None
    for call in mod.calls:
        f = call.func
        if not ((isinstance(f, ast.Name) and f.id == fn.name and not method) or (
                method and isinstance(f, ast.Attribute) and f.attr == fn.name
                and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"))):
            continue
        arg = call.args[at] if 0 <= at < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[:at + 1]) else getattr(keyword(call, param), "value", None)
        if arg is None:
            return None
        caller = mod.enclosing_function(call)
        if id(caller) not in origins:
            origins[id(caller)] = _origins(caller)
        traced = _trace(arg, origins[id(caller)])
        if softmax_of(traced, mod) is None and not _project_softmax(traced, mod):
            return None
        found = traced
    return found


def _project_softmax(node: ast.AST, mod: Module) -> bool:
    """A call of a project function or method, in any file, whose every return is a softmax."""
    return isinstance(node, ast.Call) and mod.view is not None and mod.view.returns_softmax(node)


def _trace(node: ast.AST, origins: dict[str, ast.AST], depth: int = 0) -> ast.AST:
    """What a log's argument is made of: names followed to their value, through indexing,
    ``gather``/``index_select`` and an added epsilon."""
    if depth > 6:
        return node
    if isinstance(node, ast.Name) and node.id in origins:
        return _trace(origins.at(node) if isinstance(origins, _Origins) else origins[node.id], origins, depth + 1)
    if isinstance(node, ast.Subscript):
        return _trace(node.value, origins, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.right, ast.Constant) \
            and isinstance(node.right.value, float) and abs(node.right.value) <= 1e-3:  # an epsilon, not a shift
        return _trace(node.left, origins, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("gather", "index_select", "squeeze", "unsqueeze", "view", "reshape"):
        return _trace(node.func.value, origins, depth + 1)
    return node


def _exp_sums(node: ast.AST, mod: Module) -> bool:
    """A sum of exps, or several added together (``sum(exp(a)) + sum(exp(b))``; also two or more bare
    exps, ``exp(a) + exp(b)``: a two-term logsumexp), not shifted by hand."""
    terms: list[ast.AST] = []
    _addends(node, terms)
    if len(terms) == 1:
        found = _sum_of_exp(node, mod)
        return found is not None and not _shifted(found[0])
    sums = [_sum_of_exp(t, mod) for t in terms]
    bare = [_exp_arg(t, mod) for t in terms]
    if not all(f is not None or x is not None for f, x in zip(sums, bare, strict=True)):
        return False
    shifts = [f[0] if f is not None else x for f, x in zip(sums, bare, strict=True)]
    return not any(_shifted(x) for x in shifts) and (any(f is not None for f in sums) or len(terms) >= 2)


def _addends(node: ast.AST, out: list[ast.AST]) -> None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        _addends(node.left, out)
        _addends(node.right, out)
    else:
        out.append(node)


def _shifted(x: ast.AST | None) -> bool:
    return isinstance(x, ast.BinOp) and isinstance(x.op, ast.Sub)
