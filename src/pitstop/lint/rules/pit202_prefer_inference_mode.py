"""PIT202 prefer-inference-mode."""

from __future__ import annotations

import ast
import re

from pitstop.lint.analysis import Module, dotted, is_backward, is_step, target_names
from pitstop.lint.graph import LOSS_NAME, is_forward
from pitstop.lint.project import FnId, Project
from pitstop.lint.project_facts import fn_key
from pitstop.lint.rules.base import Context, Edit, Rule
from pitstop.lint.rules.entries import TEST_ENTRY, callers_apart, only_called_apart, test_branch, used_in_training_loops
from pitstop.lint.shapes import GENERIC_METHODS
from pitstop.lint.tree import walk


class PreferInferenceMode(Rule):
    """What it does:
        Finds `torch.no_grad()` (a block or a decorator) in a file that never runs backward or an
        optimizer step, or, in a file that does, in a function that only a script's entry point
        reaches through callers that never train (`runner.sample()` beside `runner.train()`, or
        features extracted once before a probe is fitted; not an action chosen in the loop that
        also learns, nor anything called from a training script's top-level loop), or in a module-level
        `test()` / `predict()` entry point or a runner's `sample()` / `evaluate()` method that no
        project code calls, or a method of that name that only files which train nothing call, or in a
        test-only branch (`if args.test:` ... `quit()`) after which nothing trains. Blocks that copy into
        or initialise weights in place (`p.copy_(...)`,
        `torch.nn.init.*`, `p.data = ...`, `w.mul_(...)`, also on what a loop over parameters walks) and,
        in a project that trains, blocks inside nn.Module methods (a frozen teacher or encoder in
        the training forward) are left alone, except a model's sampling methods (`sample()`,
        `generate()`, `predict()` and what only they call) whose result no training uses.

    Why is this bad:
        In pure inference code torch.inference_mode() does everything no_grad does and also skips
        version counting and view tracking, which is measurably cheaper for small ops.

    Example:
        with torch.no_grad():
            return model(x)

    Use instead:
        with torch.inference_mode():
            return model(x)
    """

    code = "PIT202"
    name = "prefer-inference-mode"
    message = "no_grad in inference-only code: torch.inference_mode() also skips version counting and view tracking"
    fix = "unsafe"  # inference tensors cannot enter autograd later

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        if "no_grad" not in mod.source:
            return
        view = ctx.project
        trains = mod.trains or any(is_step(n, mod) for n in mod.calls)
        if trains and view is None:
            return
        in_training_project = view is not None and view.project.trains
        for n in [*mod.withs, *mod.defs]:
            if trains and not _apart_from_training(ctx, n):
                continue
            exprs: list[ast.expr] = []
            if isinstance(n, (ast.With, ast.AsyncWith)):
                exprs = [i.context_expr for i in n.items]
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                exprs = list(n.decorator_list)
            for e in exprs:
                target = e.func if isinstance(e, ast.Call) else e
                if (mod.qualname(target) or "") not in ("torch.no_grad", "torch.autograd.no_grad") \
                        or _writes_parameters(n, mod) \
                        or (in_training_project and _in_module_class(ctx, n) and not _arrays_only(n)) \
                        or (in_training_project and (_returns_to_training(ctx, n) or _mixed_into_loss(mod, n))) \
                        or _no_model(ctx, n) \
                        or _autograd_machinery(mod, n):
                    continue
                fix = None
                if isinstance(target, ast.Attribute) and not _stores_state(n):
                    end = ctx.span(target)[1]
                    fix = self.make_fix("use torch.inference_mode", Edit(end - len("no_grad"), end, "inference_mode"))
                self.report(ctx, e, fix)


# what an in-place update of weights looks like: p.mul_(...), w.data.add_(...), ema_p.lerp_(...)
_PARAMETER = re.compile(r"weight|bias|param|running_|ema|shadow")


def _is_parameter(receiver: ast.AST) -> bool:
    root = receiver
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    short = isinstance(root, ast.Name) and root.id in ("p", "w", "m", "v")  # for p in model.parameters(): p.mul_(...)
    return short or bool(_PARAMETER.search(ast.unparse(receiver)))


def _root(node: ast.AST) -> str | None:
    """``p_target`` for ``p_target.data`` / ``p_target[0]``: the name an attribute chain starts from."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _writes_parameters(node: ast.AST, mod: Module) -> bool:
    """The block copies into or initialises tensors in place (``p.copy_(...)``, ``w.normal_()``,
    ``torch.nn.init.*``, ``p.data = ...``): loading or initialising weights, not inference, and
    inference_mode would be wrong there. Also in place on what the function is given (DINO's
    ``trunc_normal_(tensor, ...)``: ``tensor.uniform_(...)``, an initialiser)."""
    fn = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else mod.enclosing_function(node)
    given: set[str] = set()
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):  # its parameters, never rebound
        given = {a.arg for a in fn.args.args} - {"self", "cls"} - {
            x for n in mod.body(fn) if isinstance(n, ast.Assign) for t in n.targets for x in target_names(t)}
    looped = {x for n in walk(node) if isinstance(n, (ast.For, ast.AsyncFor))
              and _PARAMETER.search(ast.unparse(n.iter)) for x in target_names(n.target)}  # zip(net.weights(), dw)
    buffers = _result_buffers(fn, mod) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    for n in walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr == "copy_" and _root(f.value) in buffers \
                    and not any(_is_parameter(a) for a in n.args):
                continue  # pred[idx:idx + n].copy_(logits.data): results gathered into a buffer made here
            if isinstance(f, ast.Attribute) and (f.attr == "copy_" or (
                    f.attr.endswith("_") and not f.attr.startswith("_") and (
                        _is_parameter(f.value) or (isinstance(f.value, ast.Name) and f.value.id in given)
                        or _root(f.value) in looped))):  # for p, p_t in zip(m.parameters(), ...): p_t.data.lerp_(...)
                return True
            if (mod.qualname(f) or "").startswith("torch.nn.init."):
                return True
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                if isinstance(t, ast.Attribute) and t.attr in ("data", "weight", "bias", "grad"):
                    return True  # also alpha.grad = da - xi * h (DARTS)
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id in looped \
                    and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)):
                return True  # for p, d in zip(net.weights(), dw): p += eps * d, in place on what it walks
    return False


_FACTORIES = {"zeros", "ones", "empty", "full", "Tensor", "FloatTensor", "LongTensor", "IntTensor", "DoubleTensor",
              "zeros_like", "empty_like", "ones_like"}


def _result_buffers(fn: ast.AST, mod: Module) -> set[str]:
    """Names the function binds to a fresh tensor (``pred = torch.FloatTensor(N, M).zero_()``): buffers it
    fills with results, not weights, and never one of its parameters."""
    found = set()
    for n in mod.body(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            call = n.value
            while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and isinstance(call.func.value, ast.Call):
                call = call.func.value  # torch.FloatTensor(N, M).zero_()
            q = mod.qualname(call.func) if isinstance(call, ast.Call) else None
            if q and q.startswith("torch.") and q.rpartition(".")[2] in _FACTORIES:
                found.add(n.targets[0].id)
    return found


def _stores_state(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Assign, ast.AugAssign)) and any(
        isinstance(t, (ast.Attribute, ast.Subscript)) for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
        for n in walk(node))


def _autograd_machinery(mod: Module, node: ast.AST) -> bool:
    """The block belongs to autograd's own work: its function calls ``torch.autograd.grad`` (a
    Neumann-series vector-Jacobian product fed back as ``grad_outputs``) or is a method of a custom
    ``torch.autograd.Function`` (gradients scaled in place in ``backward``): no inference here."""
    fn = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else mod.enclosing_function(node)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    owner = mod.parents.get(id(fn))
    if isinstance(owner, ast.ClassDef) and any((mod.qualname(b) or "") in ("torch.autograd.Function",
                                                                        "torch.autograd.function.Function")
                                               for b in owner.bases):
        return True
    return any(isinstance(c, ast.Call) and mod.qualname(c.func) == "torch.autograd.grad" for c in mod.body(fn))


_ARRAY_ENDS = ("numpy", "tolist", "item")


def _arrays_only(node: ast.AST) -> bool:
    """A block whose every statement binds a name to an array or a number made from its forward
    (``batch = self.forward(x).data.cpu().numpy()``, InferSent's ``encode()``): nothing it makes can
    reach autograd, whoever calls the method."""
    body = getattr(node, "body", [])
    return bool(body) and all(
        isinstance(s, ast.Assign) and all(isinstance(t, ast.Name) for t in s.targets)
        and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute)
        and s.value.func.attr in _ARRAY_ENDS for s in body)


def _no_model(ctx: Context, node: ast.AST) -> bool:
    """Nothing in the block runs a model: no forward, no project function, no method of an object
    (``gae = deltas[:, t] + gamma * gae``: arithmetic on buffers, often targets a loss will use, where
    an inference tensor would fail and inference_mode saves nothing worth the risk)."""
    mod = ctx.mod
    for c in mod.body(node):
        if not isinstance(c, ast.Call):
            continue
        q = mod.qualname(c.func) or ""
        if is_forward(c, mod) or (ctx.project is not None and ctx.project.callee(c) is not None) \
                or not (q.startswith(("torch.", "numpy.", "math.", "copy.")) or (not q and dotted(c.func) in _PLAIN)):
            return False
    return True


_PLAIN = {"len", "range", "reversed", "zip", "enumerate", "float", "int", "abs", "min", "max", "sum", "print", "list",
          "tuple", "dict", "sorted", "isinstance", "round", "str", "format"}


def _returns_to_training(ctx: Context, node: ast.AST) -> bool:
    """The block computes what its function returns (``with no_grad(): adv = ...`` then ``return adv``),
    and that result reaches a backward or an update through the callers (advantages, targets): an
    inference tensor there would fail when autograd saves it for backward."""
    mod, view = ctx.mod, ctx.project
    fn = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else mod.enclosing_function(node)
    if view is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    made = {t.id for a in mod.body(node) if isinstance(a, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for t in walk(a.targets[0] if isinstance(a, ast.Assign) else a.target) if isinstance(t, ast.Name)}
    returned = {x.id for r in mod.body(fn) if isinstance(r, ast.Return) and r.value is not None
                for x in walk(r.value) if isinstance(x, ast.Name)}
    if node is not fn and not made & returned:
        return False
    fid = view.fn_id(fn_key(mod, fn))
    return fid is not None and _feeds_training(view.project, fid, 0)


def _mixed_into_loss(mod: Module, node: ast.AST) -> bool:
    """A ``with no_grad():`` block that makes a target the rest of its function mixes with what it made
    outside the block and hands on: a loss of both that is returned or backpropagated
    (``loss = F.smooth_l1_loss(s_angle, t_angle)`` ... ``return loss``), or a return that combines
    them (``return (s_attention - t_attention).pow(2).mean()``): distillation targets in a loss
    function whose callers the project cannot name. An inference tensor would fail there."""
    fn = mod.enclosing_function(node)
    if not isinstance(node, (ast.With, ast.AsyncWith)) or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    made = {t for a in mod.body(node) if isinstance(a, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for t in target_names(a.targets[0] if isinstance(a, ast.Assign) else a.target)}
    end = node.end_lineno or node.lineno
    outside = {t for a in mod.body(fn) if isinstance(a, ast.Assign) and isinstance(a.value, ast.Call)
               and not (node.lineno <= a.lineno <= end) for t in target_names(a.targets[0])} - made
    after = [n for n in mod.body(fn) if getattr(n, "lineno", 0) > end]
    returns = [n for n in after if isinstance(n, ast.Return) and n.value is not None]
    returned = {x.id for r in returns for x in walk(r) if isinstance(x, ast.Name)}
    handed = bool(returns) or any(isinstance(n, ast.Call) and is_backward(n) for n in after)
    for n in after:
        if isinstance(n, ast.BinOp) and any(r.lineno <= n.lineno <= (r.end_lineno or r.lineno) for r in returns) \
                and any(_names(x) & made and _names(y) & outside for x, y in ((n.left, n.right), (n.right, n.left))):
            return True  # return (s_attention - t_attention).pow(2).mean()
        if isinstance(n, ast.Call) and handed and (LOSS_NAME.search((dotted(n.func) or "").rsplit(".", 1)[-1])
                                                   or (mod.qualname(n.func) or "").startswith("torch.nn.functional.")):
            given = set().union(*(_names(x) for x in [*n.args, *(k.value for k in n.keywords)]))
            bound = mod.parents.get(id(n))
            kept = isinstance(bound, ast.Assign) and bool({t for t in target_names(bound.targets[0])} & returned)
            if given & made and given & outside and (kept or any(r is bound for r in returns)):
                return True
    return False


def _names(node: ast.AST) -> set[str]:
    return {x.id for x in walk(node) if isinstance(x, ast.Name)}


def _feeds_training(project: Project, fid: FnId, depth: int) -> bool:
    """Some caller trains on the function's result, or returns it to one that does (4 callers deep)."""
    return depth < 4 and any(
        s.result_trains or (s.result_used and s.caller is not None and s.caller in project.files[i].functions
                            and _feeds_training(project, (i, s.caller), depth + 1))
        for i, s in project.sites_of(fid))


def _apart_from_training(ctx: Context, node: ast.AST) -> bool:
    """In a file that also trains: the block's function never trains, and neither does any function
    that calls it (three callers up; at least one call is known): a sampling or export path beside
    ``train()`` (``runner.sample()`` -> ``sample_fid()``), not an evaluation inside the training loop."""
    mod, view = ctx.mod, ctx.project
    if test_branch(ctx, node):
        return True
    fn = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else mod.enclosing_function(node)
    if view is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    fid = view.fn_id(fn_key(mod, fn))
    in_class = isinstance(mod.parents.get(id(fn)), ast.ClassDef)
    if fid is not None and not view.project.sites_of(fid) and (
            (TEST_ENTRY.match(fn.name) and isinstance(mod.parents.get(id(fn)), ast.Module))
            or (_SAMPLING.match(fn.name) and in_class
                and (fn.name in GENERIC_METHODS or not any(fn.name in f.attr_calls for f in view.project.files)))
            or (TEST_ENTRY.match(fn.name) and in_class and only_called_apart(view.project, fn.name))):
        # test(): an entry; so is a runner's uncalled sample() / evaluate() (a script elsewhere calls it); a
        # name as specific as ``sample_pixels`` called on anything is this method called, ``x.sample()`` is not
        return not view.project.fact("backward", fid) and not view.project.fact("step", fid)
    return fid is not None and not view.project.fact("backward", fid) and not view.project.fact("step", fid) \
        and (callers_apart(view.project, fid, 0) or (
            callers_apart(view.project, fid, 0, every=False) and not used_in_training_loops(view.project, fid)))



def _in_module_class(ctx: Context, node: ast.AST) -> bool:
    """Inside a method of an nn.Module subclass of a project that trains: part of a model (a frozen
    teacher or encoder) that may run inside training, not serving code. Not a sampling method
    (``sample()``, ``generate()``, ``predict()`` ...) nor a method only such methods call (a
    diffusion model's ``remove_noise()``): those are the model's inference entry points."""
    view = ctx.project
    cur, method = ctx.mod.parents.get(id(node)), node if isinstance(node, ast.FunctionDef) else None
    while cur is not None and not isinstance(cur, ast.ClassDef):
        method = cur if isinstance(cur, ast.FunctionDef) else method
        cur = ctx.mod.parents.get(id(cur))
    if cur is None or view is None or (view.i, cur.name) not in view.project.module_classes:
        return False
    if method is None:
        return True
    if _SAMPLING.match(method.name):
        return False
    sites = view.project.sites_of((view.i, f"{cur.name}.{method.name}"))
    return not sites or not all(s.caller is not None and _SAMPLING.match(s.caller.rpartition(".")[2])
                                for _, s in sites)


_SAMPLING = re.compile(r"^(sample|generate|predict|infer|inference|translate|beam_search|evaluate)(_|$|s$)")
