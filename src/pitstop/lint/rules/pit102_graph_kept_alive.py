"""PIT102 graph-kept-alive."""

from __future__ import annotations

import ast
from pathlib import PurePath
from typing import ClassVar

from pitstop.lint.analysis import Module, assigned_in, dotted, is_backward, is_step, target_names, walk_local
from pitstop.lint.flow import Flow
from pitstop.lint.graph import LOSS_NAME, GraphNames, is_forward
from pitstop.lint.project_facts import fn_key
from pitstop.lint.rules.base import Context, Edit, Fix, Rule
from pitstop.lint.rules.common import helper_backwards, training_loops, trains
from pitstop.lint.tree import walk


class GraphKeptAlive(Rule):
    """What it does:
        Finds, in a training loop, a graph-attached value (what backward runs on, results of model,
        criterion and `torch.nn.functional` calls, and arithmetic on them) appended to a list built
        outside the iteration, added to a running total, concatenated onto a tensor the loop carries
        (`preds = torch.cat((preds, out))`), stored on an attribute, or handed to a project method that
        adds it to a total on its object (`losses.update(loss, n)` of an AverageMeter whose `update()`
        runs `self.sum += val * n`); in an evaluation loop that
        runs with autograd on, a running total or a concatenation; in a rollout inside a training
        loop (steps without backward), outputs collected and then detached after it
        (`values = torch.cat(values).detach()`).

    Why is this bad:
        The stored tensor keeps its whole autograd graph (every saved activation) alive, so memory
        grows with every step until the run fails out of memory.

    Example:
        losses.append(loss)
        total += loss

    Use instead:
        losses.append(loss.item())
        total += loss.item()
    """

    code = "PIT102"
    name = "graph-kept-alive"
    message = "`{value}` is appended to `{holder}` with its autograd graph: every step's graph stays in memory"
    variants: ClassVar[dict[str, str]] = {
        "sum": "`{holder} += {value}` sums graphs across steps: the running total keeps every step's graph alive",
        "chain": "`{holder} = {holder} + {value}` chains every step's graph into the running total",
        "cat": "`{holder} = torch.cat(({holder}, {value}))` concatenates every step's `{value}` with its autograd "
               "graph: every step's graph stays in memory",
        "store": "`{holder}` keeps `{value}` with its autograd graph beyond the step",
        "meter": "`{holder}.{method}({value}, ...)` adds `{value}` to a total on the object ({where}) with its "
                 "autograd graph: every step's graph stays in memory",
    }
    fix = "safe"

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        training = trains(mod)
        if not training and ctx.project is None:
            return
        done: set[int] = set()
        trained = {id(loop) for loop, _ in training_loops(mod)} if training else set()
        evaluating = _evaluation_loops(mod, trained)
        if not training:  # an evaluation script: only where every way in runs with autograd on
            evaluating = {loop: loss for loop, loss in evaluating.items() if _autograd_on(ctx, loop)}
        for loop in [*(loop for loop, _ in training_loops(mod) if training), *evaluating]:
            graph = GraphNames(loop, mod)
            if not graph.names:
                continue
            for n in walk_local(loop):
                found = self.kept(n, loop, graph) if id(n) not in done else None
                if found is not None and id(loop) not in trained and not (
                        found[0] == "cat" or (found[0] == "sum" and (evaluating[loop] or _a_loss(found[2])))
                        or (found[0] == "" and _gated_off(mod, mod.enclosing_function(loop), loop)
                            and _autograd_on(ctx, loop))):
                    continue  # outside training: a concatenation, and a running total where a loss is computed
                if found is not None and found[0] in ("sum", "chain") and _meta_loss(mod, loop, found[1]):
                    continue
                if found is not None and mod.under_no_grad(n, loop) is None:
                    done.add(id(n))
                    variant, holder, value = found
                    numeric = variant in ("sum", "chain", "meter")
                    fix = self.detach_fix(ctx, graph, value, mod.enclosing_function(loop), holder, numeric,
                                          tensor=variant == "cat")
                    extra = _meter(ctx, n) if variant == "meter" and isinstance(n, ast.Call) else None
                    self.report(ctx, n, fix, variant=variant, holder=holder, value=ctx.text(value),
                                **({"method": extra[0], "where": extra[1]} if extra else {}))
        if training:
            self.collected_then_detached(ctx, done)

    def collected_then_detached(self, ctx: Context, done: set[int]) -> None:
        """A loop of steps (``while``, ``for t in range(n)``) without backward inside a training loop
        (a rollout) appends graph-attached outputs to a list made before it, and the first statement
        after it that reads the list rebinds it detached (``values = torch.cat(values).detach()``):
        every step's graph stays alive until then, and none is ever used."""
        mod = ctx.mod
        for outer, _ in training_loops(mod):
            for inner in walk_local(outer):
                if not _steps(inner) or any(isinstance(c, ast.Call) and is_backward(c) for c in walk_local(inner)):
                    continue
                graph, flow = None, None
                for n in walk_local(inner):
                    if id(n) in done or not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                             and n.func.attr in ("append", "extend") and n.args
                                             and isinstance(n.func.value, ast.Name)):
                        continue
                    holder = n.func.value.id
                    if assigned_in(inner, holder) or mod.under_no_grad(n) is not None:
                        continue
                    graph = graph or GraphNames(inner, mod)
                    flow = flow or Flow(mod.enclosing_function(inner), mod)
                    if graph.carries(n.args[-1], n) and flow.cut_next(inner, holder):  # type: ignore[arg-type]
                        done.add(id(n))
                        self.report(ctx, n, self.detach_fix(ctx, graph, n.args[-1], mod.enclosing_function(inner),
                                                            holder, False), holder=holder, value=ctx.text(n.args[-1]))

    def kept(self, n: ast.AST, loop: ast.AST, graph: GraphNames) -> tuple[str, str, ast.AST] | None:
        """(message variant, holder, value) when ``n`` keeps a graph-attached value beyond the iteration."""
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr in ("append", "extend", "insert") and n.args:
            holder = dotted(n.func.value)
            value = n.args[-1]
            if holder and (("." in holder) or not assigned_in(loop, holder)) and graph.carries(value, n):
                return "", holder, value
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.args \
                and (places := _meter_places(graph.mod, n)) is not None:
            holder = dotted(n.func.value)
            given = next((a for k, a in enumerate(n.args, 1) if k in places and graph.carries(a, n)), None)
            if holder and given is not None:
                return "meter", holder, given  # losses.update(loss, n): AverageMeter's self.sum += val * n
        elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add):
            holder = dotted(n.target) or _keyed(n.target)  # also ``train_info["ratio"] += imp_weights.mean()``
            if holder and graph.carries(n.value, n) and (not assigned_in(loop, holder.partition("[")[0])
                                                         or _reset_periodically(graph.mod, loop, holder, n)):
                return "sum", holder, n.value
        elif isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = n.targets[0]
            if isinstance(target, ast.Name) and isinstance(n.value, ast.BinOp) and isinstance(n.value.op, ast.Add) \
                    and dotted(n.value.left) == target.id and graph.carries(n.value.right, n) \
                    and not _rebound_each_iteration(graph.mod, n, target.id):
                return "chain", target.id, n.value.right  # total = total + loss
            if isinstance(target, ast.Name) and (graph.mod.enclosing_loops(n)[:1] == [loop] or not any(
                    isinstance(a, ast.Assign) and a is not n and any(target.id in target_names(t) for t in a.targets)
                    for a in graph.mod.body(loop))) \
                    and (added := _concatenated(n.value, target.id, graph, n)) is not None:
                return "cat", target.id, added  # preds = torch.cat((preds, out)), carried by this loop (or an
                # inner one, when nothing in this loop resets it: DKT's per-student pred_epoch)
            if isinstance(target, ast.Attribute) and target.attr != "data" and graph.carries(n.value, n):
                return "store", dotted(target) or ast.unparse(target), n.value  # p.data = ...: values, no graph
        return None

    def detach_fix(self, ctx: Context, graph: GraphNames, value: ast.AST, scope: ast.AST, holder: str,
                   numeric: bool, tensor: bool = False) -> Fix | None:
        """``.item()`` for a one-element loss going into a number (a total started at 0) or a list
        never handed to torch; ``.detach()`` otherwise (always for a ``tensor`` holder). Only for a bare name."""
        name = graph.culprit(value)
        if name is None:
            return None
        scalar = name.id in graph.scalar and not tensor
        if scalar and ((numeric and _starts_numeric(scope, holder))
                       or (not numeric and not _used_by_torch(scope, holder, ctx.mod))):
            return self.make_fix("use .item()", Edit(*ctx.span(value), f"{name.id}.item()"))
        return self.make_fix("use .detach()", Edit(*ctx.span(value), f"{name.id}.detach()"))


def _keyed(target: ast.AST) -> str | None:
    """``stats["loss"]`` for a dict entry under a constant key (``stats[k]`` is no single total)."""
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
            and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return f"{target.value.id}[{target.slice.value!r}]"
    return None


def _meter_places(mod: Module, call: ast.Call) -> tuple[int, ...] | None:
    """The parameter places (``self`` at 0) of the project method ``call`` runs that it adds to a total
    on its object, when there are any."""
    fid = _meter_method(mod, call)
    return mod.view.project.files[fid[0]].functions[fid[1]].accumulates if fid is not None and mod.view else None


def _meter_method(mod: Module, call: ast.Call) -> tuple[int, str] | None:
    """The project method ``call`` runs, when it adds a parameter to a total on its object: resolved, or
    (an object of unknown type) the one method of that name in the project, which does."""
    view = mod.view
    if view is None or not isinstance(call.func, ast.Attribute):
        return None
    fid = view.callee(call)
    if fid is None:
        found = view.project.methods.get(call.func.attr, [])
        fid = found[0] if len(found) == 1 else None
    return fid if fid is not None and view.project.files[fid[0]].functions[fid[1]].accumulates else None


def _meter(ctx: Context, call: ast.Call) -> tuple[str, str]:
    """(method, ``Class.method`` at ``file:line``) for the message."""
    fid = _meter_method(ctx.mod, call)
    fn = ctx.project.project.files[fid[0]].functions[fid[1]]  # type: ignore[index]
    return call.func.attr, f"`{fid[1]}`, {PurePath(ctx.project.project.files[fid[0]].path).name}:{fn.line}"  # type: ignore


def _steps(loop: ast.AST) -> bool:
    """A loop over steps (``while``, ``for t in range(n)``: a rollout, a decoding), not over the items of
    one batch (``for mel in dvec_mels``, whose pieces are stacked into that step's input)."""
    return isinstance(loop, ast.While) or (isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.iter, ast.Call)
                                           and dotted(loop.iter.func) == "range")


def _a_loss(value: ast.AST) -> bool:
    """``total_loss += loss`` where ``loss`` came out of the model (``loss, logits = outputs[:2]``)."""
    return bool(LOSS_NAME.search(dotted(value) or ""))


def _autograd_on(ctx: Context, loop: ast.AST) -> bool:
    """The loop's function runs with autograd on whenever it runs, in a file that trains nothing:
    it has callers in the project, none under no_grad (nor theirs), nothing turns autograd off
    for the process, and the file calls no ``set_grad_enabled``."""
    view, mod = ctx.project, ctx.mod
    scope = mod.enclosing_function(loop)
    fid = view.fn_id(fn_key(mod, scope)) if view is not None and scope is not mod.tree else None
    if fid is None or any((mod.qualname(c.func) or "").endswith("set_grad_enabled") for c in mod.calls):
        return False
    return bool(view.project.sites_of(fid)) and not view.project.always_no_grad(fid) and not any(
        s.no_grad for _, s in view.project.sites_of(fid))


def _reset_periodically(mod: Module, loop: ast.AST, holder: str, added: ast.AST) -> bool:
    """``loss_ += loss`` with ``loss_ = 0`` only under ``if step % 100 == 0:`` after it: a total over
    many steps (never one the loop runs backward on). A reset before the sum starts a total of this
    iteration."""
    resets = [n for n in walk_local(loop) if isinstance(n, ast.Assign)
              and any(holder in target_names(t) for t in n.targets)]
    for n in resets:
        if n.lineno <= added.lineno:  # type: ignore[attr-defined]
            return False
        cur = mod.parents.get(id(n))
        while cur is not None and cur is not loop and not isinstance(cur, ast.If):
            cur = mod.parents.get(id(cur))
        if not isinstance(cur, ast.If):
            return False
    return not any(isinstance(n, ast.Call) and is_backward(n) and holder in
                   {dotted(x) for x in [getattr(n.func, "value", n.func), *n.args]} for n in walk_local(loop))


def _meta_loss(mod: Module, loop: ast.AST, holder: str) -> bool:
    """``mean_outer_loss += outer_loss`` over a batch of tasks, returned for the caller's one backward
    (MAML's ``get_outer_loss``): the loop runs no backward or step of its own (only a helper's inner
    ``autograd.grad``), and the function returns the total."""
    scope = mod.enclosing_function(loop)
    if scope is mod.tree or any(isinstance(n, ast.Call) and (is_backward(n) or is_step(n, mod) or (
            mod.view is not None and mod.view.runs("step", n))) for n in walk_local(loop)):
        return False
    return any(isinstance(r, ast.Return) and r.value is not None and holder in {
        dotted(e) for e in (r.value.elts if isinstance(r.value, ast.Tuple) else [r.value])} for r in mod.body(scope))


def _rebound_each_iteration(mod: Module, stmt: ast.Assign, name: str) -> bool:
    """``loss = crit(out, y)`` then ``loss = loss + w * reg`` in the same iteration: one step's loss
    built up before its backward, not a total carried across steps."""
    inner = mod.enclosing_loops(stmt)[:1]
    return bool(inner) and any(isinstance(n, ast.Assign) and n is not stmt and any(name in target_names(t)
                               for t in n.targets) for n in walk_local(inner[0]))


def _concatenated(value: ast.AST, holder: str, graph: GraphNames, at: ast.AST) -> ast.AST | None:
    """In ``holder = torch.cat((holder, x))`` (or either branch of ``a if c else b``), the graph-attached
    ``x`` (None otherwise)."""
    if isinstance(value, ast.IfExp):
        return _concatenated(value.body, holder, graph, at) or _concatenated(value.orelse, holder, graph, at)
    if not isinstance(value, ast.Call) or (graph.mod.qualname(value.func) or "") != "torch.cat" or not value.args \
            or not isinstance(value.args[0], (ast.Tuple, ast.List)):
        return None
    parts = value.args[0].elts
    if not any(dotted(e) == holder for e in parts):
        return None
    return next((e for e in parts if dotted(e) != holder and graph.carries(e, at)), None)


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


def _evaluation_loops(mod: Module, trained: set[int]) -> dict[ast.AST, bool]:
    """Loops that run a model with autograd on but no backward (an evaluation pass without
    no_grad), each with whether it computes a loss: a running total of their losses, or their
    outputs concatenated, keeps every batch's graph. In a function that trains: the side a training
    flag turns off (``_gated_off``), or a validation pass that computes losses after every backward
    of the function (TabSurvey's early stopping)."""
    found: dict[ast.AST, bool] = {}
    helpers = {id(c) for c in helper_backwards(mod)}
    for loop in mod.loop_nodes:
        if id(loop) in trained or mod.under_no_grad(loop) is not None:
            continue
        scope = mod.enclosing_function(loop)
        backwards = [n for n in mod.body(scope) if isinstance(n, ast.Call) and (is_backward(n) or id(n) in helpers)]
        body = mod.body(loop)
        end = (loop.end_lineno or loop.lineno, loop.end_col_offset or 0)  # type: ignore[attr-defined]
        losses = any(isinstance(n, ast.Call) and LOSS_NAME.search(dotted(n.func) or "") for n in body)
        inside = {id(n) for n in body}
        validation = bool(backwards) and losses and scope is not mod.tree and not any(
            id(b) in inside or (b.lineno, b.col_offset) > end for b in backwards)  # after the epoch's steps
        if not validation and (scope is mod.tree or mod.enclosing_loops(loop)
                               or (backwards and not _gated_off(mod, scope, loop))):
            continue  # per-timestep losses summed before the step's backward: that graph is needed
        if any(isinstance(n, ast.Call) and is_forward(n, mod) and mod.under_no_grad(n, loop) is None for n in body):
            found[loop] = losses
    return found


def _gated_off(mod: Module, scope: ast.AST, loop: ast.AST) -> bool:
    """The loop sits in the branch of ``if training:`` (a parameter every backward of the function is
    conditional on) that runs no backward: the evaluation side of TranAD's ``backprop(..., training)``."""
    view = mod.view
    fid = view.fn_id(fn_key(mod, scope)) if view is not None else None
    gates = set(view.project.files[fid[0]].functions[fid[1]].gates) if fid is not None else set()
    child, cur = loop, mod.parents.get(id(loop))
    while gates and cur is not None and cur is not scope:
        if isinstance(cur, ast.If) and gates & {n.id for n in walk(cur.test) if isinstance(n, ast.Name)}:
            branch = cur.body if any(child is b for b in cur.body) else cur.orelse
            return not any(isinstance(n, ast.Call) and is_backward(n) for b in branch for n in walk(b))
        child, cur = cur, mod.parents.get(id(cur))
    return False

