"""The static (S) rules of CODES.md. Each is a function ``(Context) -> None`` that reports through
``ctx.report``; fixes are text edits marked safe or unsafe."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from pitstop.lint.analysis import (
    EVAL_LOADER,
    EVAL_NAME,
    GraphNames,
    Module,
    assigned_in,
    backward_targets,
    clears_grads,
    dotted,
    is_backward,
    is_step,
    method_calls,
    target_names,
    walk_local,
)


@dataclass(frozen=True)
class Edit:
    """Replace source characters ``[start, end)`` with ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    description: str
    edits: tuple[Edit, ...]
    safe: bool


@dataclass
class Diagnostic:
    code: str
    message: str
    line: int  # 1-based
    col: int  # 1-based, characters
    end_line: int
    end_col: int
    fix: Fix | None = None
    path: str = ""


@dataclass
class Context:
    """One file being linted."""

    mod: Module
    path: str
    lines: list[str]
    offsets: list[int] = field(default_factory=list)  # character offset of each line start
    found: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        total, self.offsets = 0, []
        for line in self.lines:
            self.offsets.append(total)
            total += len(line)

    def char_col(self, line: int, byte_col: int) -> int:
        """0-based character column of an ast byte offset."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def offset(self, line: int, byte_col: int) -> int:
        return self.offsets[line - 1] + self.char_col(line, byte_col)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.mod.source[start:end]

    def report(self, code: str, node: ast.AST, message: str, fix: Fix | None = None) -> None:
        self.found.append(Diagnostic(code, message, node.lineno, self.char_col(node.lineno, node.col_offset) + 1,
                                     node.end_lineno or node.lineno,
                                     self.char_col(node.end_lineno or node.lineno, node.end_col_offset or 0) + 1,
                                     fix, self.path))

    def add_keyword(self, call: ast.Call, keyword: str, description: str, safe: bool) -> Fix:
        """A fix adding ``keyword`` after the call's last argument (a trailing comma is kept)."""
        close = self.offset(call.end_lineno, call.end_col_offset) - 1  # the ')'
        last = max([*call.args, *call.keywords], key=lambda n: (n.end_lineno, n.end_col_offset), default=None)
        if last is None:
            return Fix(description, (Edit(close, close, keyword),), safe)
        at = self.offset(last.end_lineno, last.end_col_offset)
        rest = self.mod.source[at:close]
        if rest.strip().startswith(","):
            return Fix(description, (Edit(at + rest.index(",") + 1, at + rest.index(",") + 1, f" {keyword},"),), safe)
        return Fix(description, (Edit(at, at, f", {keyword}"),), safe)


Rule = Callable[[Context], None]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _calls(ctx: Context) -> list[ast.Call]:
    return ctx.mod.calls


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _is_const(node: ast.AST | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


# -- call-site rules ---------------------------------------------------------------------------


@rule
def reentrant_checkpoint(ctx: Context) -> None:
    """PIT301: checkpoint / checkpoint_sequential without use_reentrant=False."""
    for call in _calls(ctx):
        q = ctx.mod.qualname(call.func) or ""
        if q not in ("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"):
            continue
        kw = _keyword(call, "use_reentrant")
        if kw is None:
            if any(k.arg is None for k in call.keywords):
                continue  # **kwargs may carry it
            ctx.report("PIT301", call, f"{q.rsplit('.', 1)[-1]}() without use_reentrant=False (the reentrant "
                       "variant is deprecated and mishandles inputs without grad)",
                       ctx.add_keyword(call, "use_reentrant=False", "add use_reentrant=False", safe=True))
        elif _is_const(kw.value, True):
            ctx.report("PIT301", call, f"{q.rsplit('.', 1)[-1]}(use_reentrant=True): use the non-reentrant variant")


@rule
def unsafe_load(ctx: Context) -> None:
    """PIT501: torch.load without weights_only=True."""
    for call in _calls(ctx):
        if ctx.mod.qualname(call.func) != "torch.load":
            continue
        kw = _keyword(call, "weights_only")
        if kw is None and not any(k.arg is None for k in call.keywords):
            ctx.report("PIT501", call, "torch.load() without weights_only=True: loading a checkpoint can run "
                       "arbitrary code", ctx.add_keyword(call, "weights_only=True", "add weights_only=True",
                                                         safe=False))
        elif kw is not None and _is_const(kw.value, False):
            ctx.report("PIT501", call, "torch.load(weights_only=False) runs arbitrary code from the file; load "
                       "weights with weights_only=True (or allow-list types with torch.serialization.add_safe_globals)")


@rule
def gradcheck_precision(ctx: Context) -> None:
    """PIT601: gradcheck / gradgradcheck on inputs created without float64."""
    mod = ctx.mod
    for call in _calls(ctx):
        q = mod.qualname(call.func) or ""
        if q.rsplit(".", 1)[-1] not in ("gradcheck", "gradgradcheck") or not q.startswith("torch.autograd"):
            continue
        if len(call.args) < 2:
            continue
        scope = mod.enclosing_function(call)
        created = _tensor_origins(scope, mod)
        inputs = call.args[1]
        elements = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
        for el in elements:
            origin = created.get(el.id) if isinstance(el, ast.Name) else el if isinstance(el, ast.Call) else None
            if origin is not None and _low_precision(origin, mod):
                ctx.report("PIT601", call, f"{q.rsplit('.', 1)[-1]}() on a float32 input "
                           f"(`{ctx.text(el)}`): finite differences need dtype=torch.float64")
                break


_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "full", "tensor", "randn_like", "rand_like", "linspace",
              "arange", "as_tensor"}


def _tensor_origins(scope: ast.AST, mod: Module) -> dict[str, ast.Call]:
    found = {}
    for n in walk_local(scope):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for t in n.targets:
                for name in target_names(t):
                    found[name] = n.value
    return found


def _low_precision(call: ast.Call, mod: Module) -> bool:
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
    dtype = _keyword(node, "dtype")
    if dtype is None:
        if q.endswith(".tensor") or q.endswith(".as_tensor"):
            return bool(node.args) and any(isinstance(c, ast.Constant) and isinstance(c.value, float)
                                           for c in ast.walk(node.args[0]))
        return True
    text = ast.unparse(dtype.value)
    return "float64" not in text and "double" not in text


@rule
def unstable_logsumexp(ctx: Context) -> None:
    """PIT602: log(sum(exp(x))) and log(softmax(x)) written by hand."""
    mod = ctx.mod
    for call in _calls(ctx):
        inner = _log_of(call, mod)
        if inner is None:
            continue
        exp_sum = _sum_of_exp(inner, mod)
        if exp_sum is not None and isinstance(exp_sum[0], ast.BinOp) and isinstance(exp_sum[0].op, ast.Sub):
            continue  # exp(x - max) : shifted by hand, the stable form
        if exp_sum is not None:
            x, dim, keepdim = exp_sum
            fix = None
            if dim is not None:
                kd = f", keepdim={ctx.text(keepdim)}" if keepdim is not None else ""
                fix = Fix("rewrite to torch.logsumexp", (Edit(*ctx.span(call), f"torch.logsumexp({ctx.text(x)}, "
                                                                       f"dim={ctx.text(dim)}{kd})"),), True)
            ctx.report("PIT602", call, "log(sum(exp(x))) overflows for large x: use torch.logsumexp", fix)
            continue
        soft = _softmax_of(inner, mod)
        if soft is not None:
            x, dim = soft
            fix = None
            if dim is not None:
                fix = Fix("rewrite to torch.log_softmax",
                          (Edit(*ctx.span(call), f"torch.log_softmax({ctx.text(x)}, dim={ctx.text(dim)})"),), True)
            ctx.report("PIT602", call, "log(softmax(x)) underflows to -inf: use torch.log_softmax", fix)


def _log_of(call: ast.Call, mod: Module) -> ast.AST | None:
    """The argument of torch.log(X) or X.log()."""
    if (mod.qualname(call.func) or "") == "torch.log" and len(call.args) == 1 and not call.keywords:
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
    dim = args[0] if args else (_keyword(node, "dim").value if _keyword(node, "dim") else None)
    keepdim = args[1] if len(args) > 1 else (_keyword(node, "keepdim").value if _keyword(node, "keepdim") else None)
    return x, dim, keepdim


def _softmax_of(node: ast.AST, mod: Module) -> tuple[ast.AST, ast.AST | None] | None:
    if not isinstance(node, ast.Call):
        return None
    q = mod.qualname(node.func) or ""
    if q in ("torch.softmax", "torch.nn.functional.softmax") and node.args:
        dim = node.args[1] if len(node.args) > 1 else (_keyword(node, "dim").value if _keyword(node, "dim") else None)
        return node.args[0], dim
    if isinstance(node.func, ast.Attribute) and node.func.attr == "softmax" and not q:
        dim = node.args[0] if node.args else (_keyword(node, "dim").value if _keyword(node, "dim") else None)
        return node.func.value, dim
    return None


@rule
def loader_in_main_process(ctx: Context) -> None:
    """PIT401 (info): a training DataLoader with num_workers=0 (and no pin_memory with CUDA)."""
    mod = ctx.mod
    cuda = "cuda" in mod.source
    for call in _calls(ctx):
        if (mod.qualname(call.func) or "") not in ("torch.utils.data.DataLoader", "torch.utils.data.dataloader."
                                                   "DataLoader"):
            continue
        if any(k.arg is None for k in call.keywords):
            continue
        workers = _keyword(call, "num_workers")
        shuffle = _keyword(call, "shuffle")
        training = (shuffle is not None and not _is_const(shuffle.value, False)) or \
            _keyword(call, "sampler") is not None or "train" in ctx.text(call.args[0] if call.args else call).lower()
        if not training:
            continue
        if workers is None or (isinstance(workers.value, ast.Constant) and workers.value.value == 0):
            pin = _keyword(call, "pin_memory")
            extra = " and no pin_memory=True although CUDA is used" if cuda and (pin is None or _is_const(
                pin.value, False)) else ""
            ctx.report("PIT401", call, f"training DataLoader loads batches in the main process (num_workers=0)"
                       f"{extra}; measure settings with `pitstop data`")


# -- loop rules ----------------------------------------------------------------------------------


def _scopes(mod: Module) -> list[ast.AST]:
    return [mod.tree, *mod.defs]


def _training_loops(mod: Module) -> list[tuple[ast.AST, list[ast.Call]]]:
    """Loops that run backward (directly or in nested loops), with those backward calls, in
    source order."""
    by_loop: dict[int, tuple[ast.AST, list[ast.Call]]] = {}
    for call in mod.backwards:
        for loop in mod.enclosing_loops(call):
            by_loop.setdefault(id(loop), (loop, []))[1].append(call)
    return sorted(by_loop.values(), key=lambda p: (p[0].lineno, p[0].col_offset))


def _innermost_loop(mod: Module, node: ast.AST, stop: ast.AST | None = None) -> ast.AST | None:
    cur = mod.parents.get(id(node))
    while cur is not None and cur is not stop and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            return cur
        cur = mod.parents.get(id(cur))
    return None


@rule
def stale_gradients(ctx: Context) -> None:
    """PIT101: a loop that runs backward and step but never clears gradients."""
    mod = ctx.mod
    if not mod.trains:
        return
    reported: set[int] = set()
    for step in (n for n in mod.calls if is_step(n, mod)):
        loop = _innermost_loop(mod, step)
        if loop is None or id(loop) in reported:
            continue
        if not any(is_backward(n) for n in walk_local(loop)) and not _passes_closure(step, mod):
            continue
        if clears_grads(loop, mod):
            continue
        reported.add(id(loop))
        ctx.report("PIT101", step, f"`{ctx.text(step)}` runs every iteration but gradients are never cleared in "
                   f"this loop: each step adds the previous steps' gradients (call optimizer.zero_grad())")


def _passes_closure(step: ast.Call, mod: Module) -> bool:
    return any(isinstance(a, ast.Name) and a.id in mod.functions for a in step.args)


@rule
def graph_kept_alive(ctx: Context) -> None:
    """PIT102: graph-attached tensors appended, summed or stored across iterations of a training loop."""
    mod = ctx.mod
    if not mod.trains:
        return
    done: set[int] = set()
    for loop, _ in _training_loops(mod):
        graph = GraphNames(loop, mod)
        if not graph.names:
            continue
        scope = mod.enclosing_function(loop)
        for n in walk_local(loop):
            if id(n) in done:
                continue
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and n.func.attr in ("append", "extend", "insert") and n.args:
                holder = dotted(n.func.value)
                value = n.args[-1]
                if holder and (("." in holder) or not assigned_in(loop, holder)) and graph.carries(value) \
                        and mod.under_no_grad(n, loop) is None:
                    done.add(id(n))
                    fix = _detach_fix(ctx, graph, value, scope, holder, numeric=False)
                    ctx.report("PIT102", n, f"`{ctx.text(value)}` is appended to `{holder}` with its autograd graph: "
                               f"every step's graph stays in memory", fix)
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add):
                holder = dotted(n.target)
                if holder and graph.carries(n.value) and not assigned_in(loop, holder) \
                        and mod.under_no_grad(n, loop) is None:
                    done.add(id(n))
                    fix = _detach_fix(ctx, graph, n.value, scope, holder, numeric=True)
                    ctx.report("PIT102", n, f"`{holder} += {ctx.text(n.value)}` sums graphs across steps: the running "
                               f"total keeps every step's graph alive", fix)
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and isinstance(n.value, ast.BinOp) and isinstance(n.value.op, ast.Add) \
                    and dotted(n.value.left) == n.targets[0].id and graph.carries(n.value.right) \
                    and mod.under_no_grad(n, loop) is None:
                holder = n.targets[0].id  # total = total + loss
                done.add(id(n))
                fix = _detach_fix(ctx, graph, n.value.right, scope, holder, numeric=True)
                ctx.report("PIT102", n, f"`{holder} = {holder} + {ctx.text(n.value.right)}` chains every step's graph "
                           f"into the running total", fix)
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Attribute) \
                    and graph.carries(n.value) and mod.under_no_grad(n, loop) is None:
                holder = dotted(n.targets[0]) or ctx.text(n.targets[0])
                done.add(id(n))
                fix = _detach_fix(ctx, graph, n.value, scope, holder, numeric=False)
                ctx.report("PIT102", n, f"`{holder}` keeps `{ctx.text(n.value)}` with its autograd graph beyond the "
                           f"step", fix)


def _detach_fix(ctx: Context, graph: GraphNames, value: ast.AST, scope: ast.AST, holder: str,
                numeric: bool) -> Fix | None:
    """``.item()`` for a one-element loss going into a number (a total started at 0) or a list
    never handed to torch; ``.detach()`` otherwise. Only for a bare name."""
    name = graph.culprit(value)
    if name is None:
        return None
    scalar = name.id in graph.scalar
    if scalar and numeric and _starts_numeric(scope, holder):
        return Fix("use .item()", (Edit(*ctx.span(value), f"{name.id}.item()"),), True)
    if scalar and not numeric and not _used_by_torch(scope, holder, ctx.mod):
        return Fix("use .item()", (Edit(*ctx.span(value), f"{name.id}.item()"),), True)
    return Fix("use .detach()", (Edit(*ctx.span(value), f"{name.id}.detach()"),), True)


def _starts_numeric(scope: ast.AST, holder: str) -> bool:
    for n in walk_local(scope):
        if isinstance(n, ast.Assign) and any(dotted(t) == holder for t in n.targets):
            return isinstance(n.value, ast.Constant) and isinstance(n.value.value, (int, float))
    return False


def _used_by_torch(scope: ast.AST, holder: str, mod: Module) -> bool:
    for n in walk_local(scope):
        if isinstance(n, ast.Call) and (mod.qualname(n.func) or "").startswith("torch.") \
                and any(dotted(a) == holder for a in n.args):
            return True
    return False


@rule
def retain_graph_in_loop(ctx: Context) -> None:
    """PIT103: retain_graph=True with no second backward in the iteration; a hidden state carried
    across iterations without .detach()."""
    mod = ctx.mod
    if not mod.trains:
        return
    for loop, calls in _training_loops(mod):
        if _innermost_loop(mod, calls[0]) is not loop:
            continue
        retained = [c for c in calls if _is_const(getattr(_keyword(c, "retain_graph"), "value", None), True)]
        if retained and len(calls) == 1:
            ctx.report("PIT103", retained[0], "backward(retain_graph=True) runs every iteration but no second "
                       "backward uses the graph: its saved tensors are kept for nothing")
        _carried_state(ctx, loop)


def _carried_state(ctx: Context, loop: ast.AST) -> None:
    """``out, h = model(x, h)`` in a training loop without ``h = h.detach()``."""
    mod = ctx.mod
    for n in walk_local(loop):
        if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)):
            continue
        targets = {name for t in n.targets for name in target_names(t)}
        args = {name for a in [*n.value.args, *(k.value for k in n.value.keywords)] for name in target_names(a)}
        carried = sorted(targets & args)
        if not carried:
            continue
        if any(_detaches(loop, name, mod) for name in carried):
            continue
        ctx.report("PIT103", n, f"`{', '.join(carried)}` is carried from one iteration to the next without "
                   f".detach(): each backward reaches into every earlier step's graph (detach it at the start of "
                   f"the iteration)")


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


@rule
def training_without_grad(ctx: Context) -> None:
    """PIT104: the loss computed, or backward run, under no_grad / inference_mode."""
    mod = ctx.mod
    if not mod.trains:
        return
    for loop, calls in _training_loops(mod):
        losses = {t.id for c in calls for t in backward_targets(c, mod) if isinstance(t, ast.Name)}
        for n in sorted((n for n in walk_local(loop) if isinstance(n, (ast.Assign, ast.Call))),
                        key=lambda n: (n.lineno, n.col_offset)):
            hit = None
            if isinstance(n, ast.Assign) and losses & {x for t in n.targets for x in target_names(t)}:
                hit = "the loss is computed"
            elif is_backward(n):
                hit = "backward() runs"
            if hit is None:
                continue
            off = mod.under_no_grad(n)
            if off is not None:
                how = ast.unparse(off.items[0].context_expr) if isinstance(off, (ast.With, ast.AsyncWith)) \
                    else "@" + ast.unparse(off)
                ctx.report("PIT104", n, f"{hit} under {how}: autograd is off, nothing is learned")
                break


def _eval_calls(scope: ast.AST) -> list[ast.Call]:
    return [c for c in method_calls(scope, "eval", into_defs=True) if not c.args]


def _train_calls(scope: ast.AST) -> list[ast.Call]:
    return [c for c in method_calls(scope, "train", into_defs=True)
            if not c.args or not _is_const(c.args[0], False)]


def _calls_eval_helper(loop: ast.AST, mod: Module) -> ast.Call | None:
    """A call in the loop to a local function that sets a module to eval mode."""
    for n in walk_local(loop):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in mod.functions:
            fn = mod.functions[n.func.id]
            if _eval_calls(fn) and not _train_calls(fn):
                return n
    return None


@rule
def wrong_module_mode(ctx: Context) -> None:
    """PIT109: eval() inside a training loop without train() in it; evaluation code without eval()."""
    mod = ctx.mod
    seen: set[int] = set()
    for loop, _ in _training_loops(mod):
        steps = [n for n in walk_local(loop) if is_step(n, mod)]
        if not steps or id(loop) in seen:
            continue
        evals = [c for c in method_calls(loop, "eval") if not c.args]
        helper = _calls_eval_helper(loop, mod)
        if (evals or helper) and not _train_calls(loop):
            seen.add(id(loop))
            where = evals[0] if evals else helper
            ctx.report("PIT109", where, f"`{ctx.text(where)}` switches to eval mode inside the training loop and "
                       f"nothing switches back: the next iterations train in eval mode (call model.train() at the "
                       f"start of each iteration)")
    if any(isinstance(c.func, ast.Attribute) and c.func.attr == "eval" and not c.args for c in mod.calls):
        return  # the file sets eval mode somewhere: callers are assumed to handle it
    for fn in mod.functions.values():
        if EVAL_NAME.search(fn.name) and _forwards(fn, mod) and not any(is_backward(n) for n in walk_local(fn)):
            ctx.report("PIT109", fn, f"`{fn.name}` evaluates without model.eval(): dropout stays active and "
                       f"batch-norm uses batch statistics")


def _forwards(scope: ast.AST, mod: Module) -> list[ast.Call]:
    g = GraphNames.__new__(GraphNames)
    g.mod = mod
    return [n for n in walk_local(scope) if isinstance(n, ast.Call) and GraphNames.model_call(g, n)
            and not (mod.qualname(n.func) or "").startswith("torch.nn.functional")]


@rule
def inference_with_grad(ctx: Context) -> None:
    """PIT201: evaluation code whose forward passes run with autograd recording."""
    mod = ctx.mod
    for fn in mod.functions.values():
        if not EVAL_NAME.search(fn.name) or any(is_backward(n) for n in walk_local(fn)):
            continue
        _report_grad_forwards(ctx, fn, f"`{fn.name}`")
    for loop in mod.loop_nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or not EVAL_LOADER.search(ctx.text(loop.iter)):
            continue
        fn = mod.enclosing_function(loop)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and EVAL_NAME.search(fn.name):
            continue  # reported with its function
        if any(is_backward(n) for n in walk_local(loop)):
            continue
        _report_grad_forwards(ctx, loop, f"the loop over `{ctx.text(loop.iter)}`")


def _report_grad_forwards(ctx: Context, scope: ast.AST, what: str) -> None:
    for call in _forwards(scope, ctx.mod):
        if ctx.mod.under_no_grad(call) is None:
            ctx.report("PIT201", call, f"{what} runs `{ctx.text(call.func)}(...)` with autograd recording a graph "
                       f"nothing uses: wrap it in torch.inference_mode() (or torch.no_grad())")
            return


@rule
def prefer_inference_mode(ctx: Context) -> None:
    """PIT202 (info): pure inference code using no_grad (a file that never trains)."""
    mod = ctx.mod
    if mod.trains or "no_grad" not in mod.source or any(is_step(n, mod) for n in mod.calls):
        return
    for n in [*mod.withs, *mod.defs]:
        exprs = []
        if isinstance(n, (ast.With, ast.AsyncWith)):
            exprs = [i.context_expr for i in n.items]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            exprs = list(n.decorator_list)
        for e in exprs:
            target = e.func if isinstance(e, ast.Call) else e
            if (mod.qualname(target) or "") not in ("torch.no_grad", "torch.autograd.no_grad"):
                continue
            fix = None
            if isinstance(target, ast.Attribute) and not _stores_state(n):
                end = ctx.span(target)[1]
                fix = Fix("use torch.inference_mode", (Edit(end - len("no_grad"), end, "inference_mode"),), False)
            ctx.report("PIT202", e, "no_grad in inference-only code: torch.inference_mode() also skips version "
                       "counting and view tracking", fix)


def _stores_state(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Assign, ast.AugAssign)) and any(
        isinstance(t, (ast.Attribute, ast.Subscript)) for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
        for n in ast.walk(node))
