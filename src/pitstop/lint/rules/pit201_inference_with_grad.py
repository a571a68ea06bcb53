"""PIT201 inference-with-grad."""

from __future__ import annotations

import ast
import re
from pathlib import PurePath
from typing import ClassVar

from pitstop.lint.analysis import EVAL_NAME, Module, dotted, is_backward, is_step, walk_local
from pitstop.lint.flow import Flow, carried
from pitstop.lint.graph import CONSTRUCTOR
from pitstop.lint.project_facts import fn_key
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import evaluating_sites, evaluation_side, forwards, helper_forwards, main_block
from pitstop.lint.rules.entries import callers_never_train
from pitstop.lint.rules.idioms import (
    bound_by,
    detached_into_forward,
    frozen_models,
    grad_disabled_globally,
    in_env_loop,
    receiver_frozen,
    target_network,
    tests_autograd,
)
from pitstop.lint.tree import walk

# hooks a framework calls with autograd already off (Lightning, HF Trainer)
_FRAMEWORK_NO_GRAD = re.compile(r"^(validation|test|predict|prediction)_step$|_epoch_end$")


class InferenceWithGrad(Rule):
    """What it does:
        Finds model forward passes whose result never reaches a backward: evaluation and sampling
        functions, prediction after training, inference scripts, accuracy computed inside a
        training loop, a teacher's or a rollout's outputs that only reach the loss detached. A forward
        counts as used when its value flows (through assignments, losses and calls, not through
        `.item()`, `.data` or a later `.detach()`) into `backward()`,
        `torch.autograd.grad`, an update call, a project function that runs backward, or is stored
        on an object; a returned value is used unless every caller in the project drops it.
        Forwards under `no_grad`/`inference_mode` (also where every caller opens one), of frozen
        models (`requires_grad_(False)`), in framework evaluation hooks, bare `model(x)` warm-up
        statements, action selection in an environment loop that trains, a target network's value
        and a GAN's fake batch detached into the discriminator (the usual idioms in code that trains),
        and files that test autograd with gradcheck are left alone.

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
    variants: ClassVar[dict[str, str]] = {
        "function": "`{name}` runs `{fn}(...)` (line {line}) with autograd recording a graph nothing uses: wrap "
                    "it in torch.inference_mode() (or decorate the function with it)",
        "apart": "`{name}` runs `{fn}(...)` (line {line}) with autograd recording a graph nothing uses: nothing that "
                 "calls it trains ({where}: no backward or optimizer step); wrap it in torch.inference_mode() (or "
                 "decorate the function with it)",
        "gated": "`{name}` runs `{fn}(...)` with autograd on when called to evaluate ({where}), where its "
                 "backward (only under `{gate}`) is skipped: the graph is never used; wrap that call in "
                 "torch.inference_mode()",
        "phase": "`{fn}(...)` runs with autograd on for the {phase!r} {var} too, where its backward (only under "
                 "`{gate}`) is skipped: the graph is never used; wrap it in `with torch.set_grad_enabled({var} == "
                 "{train!r}):`",
    }

    def gated(self, ctx: Context, fn: ast.AST, calls: list[ast.Call]) -> None:
        """A function that trains or evaluates depending on a parameter (``iteration(..., train=False)``,
        ``run_epoch(cross_valid=True)``, ``fit(phase="validation")``): every backward sits under that
        parameter, and a caller turns it off (or hands it a validation loader or phase) without
        no_grad: that call's forwards build graphs nothing uses."""
        view = ctx.project
        fid = view.fn_id(fn_key(ctx.mod, fn)) if view is not None else None
        if view is None or fid is None or self.exempt(ctx, fn):
            return
        info = view.project.files[fid[0]].functions[fid[1]]
        gates = set(info.gates)
        if not info.backward or not gates or any(
                (self_q := ctx.mod.qualname(c.func)) and self_q.endswith("set_grad_enabled")
                for c in ctx.mod.body(fn) if isinstance(c, ast.Call)):
            return  # ``torch.set_grad_enabled(split == "train")``: it turns autograd off itself
        for i, site in evaluating_sites(ctx.mod, fn, info, view.project.sites_of(fid)):
            if site.no_grad:
                continue
            if site.caller is not None and site.caller in view.project.files[i].functions \
                    and view.project.always_no_grad((i, site.caller)):
                continue
            where = f"line {site.line}" if i == fid[0] else f"{PurePath(view.project.files[i].path).name}:{site.line}"
            for first in evaluation_side(ctx.mod, fn, info, site, calls) or calls[:1]:  # each branch it evaluates in
                self.report(ctx, first, variant="gated", name=fn.name, fn=ctx.text(first.func),  # type: ignore
                            where=where, gate=sorted(gates)[0])
            return

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        frozen = frozen_models(mod)
        if grad_disabled_globally(mod) or tests_autograd(mod):
            return
        for scope in [mod.tree, *mod.defs]:
            calls = [c for c in forwards(scope, mod)
                     if dotted(c.func) not in frozen and not receiver_frozen(c, frozen)] + helper_forwards(ctx, scope)
            if not calls or (scope is not mod.tree and self.exempt(ctx, scope)):
                continue
            self.phased(ctx, scope, calls)
            unused = self.unused(ctx, scope, calls)
            if not unused:
                if scope is not mod.tree:
                    self.gated(ctx, scope, calls)
                continue
            if scope is mod.tree:
                for call in unused:
                    self.report(ctx, call, what="this script", fn=ctx.text(call.func))
            else:
                first = unused[0]
                where = self.apart(ctx, scope) if not any(_trains(n, mod) for n in walk_local(scope)
                                                          if isinstance(n, ast.Call)) else None
                name: str = scope.name  # type: ignore[attr-defined]
                if where:
                    self.report(ctx, scope, variant="apart", name=name, fn=ctx.text(first.func), line=first.lineno,
                                where=where)
                else:
                    self.report(ctx, scope, variant="function", name=name, fn=ctx.text(first.func), line=first.lineno)

    def phased(self, ctx: Context, scope: ast.AST, calls: list[ast.Call]) -> None:
        """``for split in ["train", "valid"]:`` around one forward for every split, whose backward runs only
        under ``if split == "train":`` (and no ``torch.set_grad_enabled(split == "train")``): the other
        splits' forwards build graphs nothing uses."""
        mod = ctx.mod
        owner = scope if scope is not mod.tree else None
        for loop in mod.loop_nodes:
            if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.target, ast.Name) \
                    or mod.enclosing_function(loop) is not owner:
                continue
            var = loop.target.id
            gates = [_phase_gate(mod, b, loop, var) for b in mod.body(loop)
                     if isinstance(b, ast.Call) and is_backward(b)]
            phases = _phases(mod, scope, loop.iter) if gates else []
            if not phases or any(g is None for g, _ in gates):
                continue
            skipped = [p for p in phases if all(p != value for _, value in gates)]
            inside = [c for c in calls if loop in mod.enclosing_loops(c) and mod.under_no_grad(c) is None
                      and not _grad_switched(mod, c) and not any(_inside(mod, c, g) for g, _ in gates)]
            first_gate = gates[0][0]
            if skipped and inside and first_gate is not None:
                first = min(inside, key=lambda c: (c.lineno, c.col_offset))
                self.report(ctx, first, variant="phase", fn=ctx.text(first.func), phase=skipped[0], var=var,
                            gate=ctx.text(first_gate.test), train=gates[0][1])

    def exempt(self, ctx: Context, fn: ast.AST) -> bool:
        name: str = fn.name  # type: ignore[attr-defined]
        if _FRAMEWORK_NO_GRAD.search(name) or any(ctx.mod.is_no_grad(d) for d in fn.decorator_list):  # type: ignore
            return True
        view = ctx.project
        owner = ctx.mod.parents.get(id(fn))
        if name == "forward" and isinstance(owner, ast.ClassDef) and view is not None \
                and (view.i, owner.name) in view.project.module_classes:
            return True  # a model's own forward: its sub-forwards make its output, its caller decides on autograd
        fid = view.fn_id(fn_key(ctx.mod, fn)) if view is not None else None
        return fid is not None and view.project.always_no_grad(fid)

    def unused(self, ctx: Context, scope: ast.AST, calls: list[ast.Call]) -> list[ast.Call]:
        """The forwards whose graph nothing uses, the first of each chain (``h = enc(x)`` feeding
        ``dec(h)`` is one finding)."""
        mod = ctx.mod
        flow = Flow(scope, mod)
        dropped = None
        trains = any(_trains(n, mod) for n in walk_local(scope) if isinstance(n, ast.Call))
        apart = not trains and self.apart(ctx, scope) is not None
        found: list[ast.Call] = []
        reported: set[str] = set()
        for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
            if mod.under_no_grad(call) is not None or _deliberate(mod, call) or _smoke_test(mod, call) \
                    or _used_as_module(mod, scope, call) or (mod.view is not None and mod.view.runs("backward", call)) \
                    or (trains and (in_env_loop(mod, call) or target_network(call))):
                # the last: maml(x_spt, y_spt, ...) whose class's forward runs the backward and step itself
                continue
            fate = "dead" if apart else flow.fate(call, detach_cuts=not trains)  # nothing could train on it
            if fate != "dead" and len(calls) <= 64:  # what runs after it only (a name reused by training)
                loops = mod.enclosing_loops(call)  # a value the next iteration reads first: its loop counts too
                carried_over = bool(loops) and _read_first(loops[0], bound_by(mod, call))
                fate = Flow(scope, mod, after=loops[0] if carried_over else call).fate(  # type: ignore[arg-type]
                    call, detach_cuts=not trains)
            if fate == "returned":
                dropped = self.dropped_by_callers(ctx, scope) if dropped is None else dropped
                fate = "dead" if dropped else fate
            if fate != "dead" or (trains and detached_into_forward(mod, scope, call, calls)):
                continue
            inputs = {x for a in [*call.args, *(k.value for k in call.keywords)] for x in carried(a)}
            if not inputs & reported:
                found.append(call)
            reported |= bound_by(mod, call)
        return found

    def apart(self, ctx: Context, scope: ast.AST) -> str | None:
        """The files that call the function, when nothing in them (or in their callers' files) trains."""
        view = ctx.project
        fid = view.fn_id(fn_key(ctx.mod, scope)) if view is not None and scope is not ctx.mod.tree else None
        if view is None or fid is None or not callers_never_train(view.project, fid):
            return None
        return ", ".join(sorted({PurePath(view.project.files[i].path).name for i, _ in view.project.sites_of(fid)}))

    def dropped_by_callers(self, ctx: Context, scope: ast.AST) -> bool:
        """Every call of the function in the project drops its result (and there is one)."""
        view = ctx.project
        if view is None or scope is ctx.mod.tree:
            return False
        if scope.name in ("forward", "__call__"):  # type: ignore[attr-defined]
            return False  # called as model(x): its callers are not all known
        fid = view.fn_id(fn_key(ctx.mod, scope))
        sites = view.project.sites_of(fid) if fid is not None else []
        if not sites:  # nobody here calls it: an evaluation function by name is run for its numbers
            return _uncalled_evaluation(ctx, scope)
        return not any(s.result_used for _, s in sites)


def _uncalled_evaluation(ctx: Context, fn: ast.AST) -> bool:
    """``def evaluate(net, criterion, X, Y):`` that no file of the project calls, in a file that trains
    or at module level beside functions that do: an evaluation entry point (a notebook or the REPL runs
    it), whose returned outputs are read, not trained on. Not a model's own method (``predict`` of a
    library-style class) and not one that runs backward."""
    name: str = fn.name  # type: ignore[attr-defined]
    if not EVAL_NAME.search(name) or isinstance(ctx.mod.parents.get(id(fn)), ast.ClassDef):
        return False
    return ctx.mod.trains and not any(isinstance(n, ast.Call) and _trains(n, ctx.mod) for n in walk_local(fn))


def _phases(mod: Module, scope: ast.AST, expr: ast.AST) -> list[str]:
    """The string constants a loop iterates over: a literal list or tuple of them, or a name assigned
    one in the scope (``splits = ["train", "valid"] + (["test"] if args.test else [])``); [] otherwise."""
    if isinstance(expr, ast.Name):
        values = [a.value for a in mod.body(scope) if isinstance(a, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == expr.id for t in a.targets)]
        if len(values) != 1:
            return []
        expr = values[0]
    return _strings(expr) or []


def _strings(expr: ast.AST) -> list[str] | None:
    """The strings of a list/tuple literal (joined with ``+``, chosen by ``x if c else y``); None when
    anything else is in it."""
    if isinstance(expr, (ast.List, ast.Tuple)):
        if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in expr.elts):
            return [e.value for e in expr.elts]  # type: ignore[attr-defined]
        return None
    parts = [expr.left, expr.right] if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add) else \
        [expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else None
    if parts is None:
        return None
    found = [_strings(p) for p in parts]
    return None if any(f is None for f in found) else [s for f in found for s in f]  # type: ignore[union-attr]


def _phase_gate(mod: Module, call: ast.Call, loop: ast.AST, var: str) -> tuple[ast.If | None, str | None]:
    """The ``if var == "train":`` inside ``loop`` that the backward ``call`` runs under, and its value."""
    cur = mod.parents.get(id(call))
    while cur is not None and cur is not loop:
        if isinstance(cur, ast.If) and isinstance(cur.test, ast.Compare) and len(cur.test.ops) == 1 \
                and isinstance(cur.test.ops[0], ast.Eq):
            sides = [cur.test.left, cur.test.comparators[0]]
            names = [s for s in sides if isinstance(s, ast.Name) and s.id == var]
            consts = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
            if names and consts and _in_body(mod, call, cur):
                return cur, str(consts[0].value)
        cur = mod.parents.get(id(cur))
    return None, None


def _grad_switched(mod: Module, node: ast.AST) -> bool:
    """Under ``with torch.set_grad_enabled(<an expression>):`` (the phase decides)."""
    return any(isinstance(a, (ast.With, ast.AsyncWith)) and any(
        isinstance(i.context_expr, ast.Call) and (mod.qualname(i.context_expr.func) or "").endswith("set_grad_enabled")
        for i in a.items) for a in mod.ancestors(node))


def _in_body(mod: Module, node: ast.AST, branch: ast.If) -> bool:
    cur, parent = node, mod.parents.get(id(node))
    while parent is not None and parent is not branch:
        cur, parent = parent, mod.parents.get(id(parent))
    return parent is branch and any(s is cur for s in branch.body)


def _inside(mod: Module, node: ast.AST, outer: ast.AST | None) -> bool:
    return any(a is outer for a in mod.ancestors(node))


_TRAIN_CALL = re.compile(r"train|update|learn|optimi[sz]e|(^|_)fit$", re.I)


def _trains(call: ast.Call, mod: Module) -> bool:
    """A call that trains: backward, an optimizer step, a project function that runs backward, or
    a method named like a training step (``agent.train_net()``, ``learner.update(batch)``)."""
    if is_backward(call) or is_step(call, mod) or (mod.view is not None and mod.view.runs("backward", call)):
        return True
    last = (dotted(call.func) or "").rsplit(".", 1)[-1]
    return bool(_TRAIN_CALL.search(last)) and not (last == "train" and not call.args) \
        and not CONSTRUCTOR.match(last)  # model.train(): a mode; create_train_env(...): makes something


_MODULE_ONLY = {"load_state_dict", "state_dict", "parameters", "named_parameters", "modules", "children", "eval",
                "register_forward_hook", "zero_grad", "requires_grad_"}


def _used_as_module(mod: Module, scope: ast.AST, call: ast.Call) -> bool:
    """``model = resnet34()`` then ``model.load_state_dict(...)`` / ``model.eval()``: what the call
    returned is a module (a factory built it), not a forward's output (tensors have no such methods)."""
    bound = bound_by(mod, call)
    if len(bound) != 1 or not isinstance(mod.parents.get(id(call)), ast.Assign):
        return False
    (name,) = bound
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MODULE_ONLY
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name and n.lineno >= call.lineno
               for n in mod.body(scope))


def _deliberate(mod: Module, call: ast.Call) -> bool:
    """A bare ``model(x)`` statement: a warm-up or smoke test run for its effect."""
    return isinstance(mod.parents.get(id(call)), ast.Expr)


_CONFIG = re.compile(r"^(OmegaConf|omegaconf|yaml|json|toml|configparser|pickle|np|numpy)\.")  # a config, no weights
_LOADS = re.compile(r"^(load|load_state_dict|from_pretrained|load_checkpoint|load_from_checkpoint|restore\w*|"
                    r"load_weights?|load_model)$")


def _smoke_test(mod: Module, call: ast.Call) -> bool:
    """A model file's own ``if __name__ == "__main__":`` check of its classes: the file never trains
    and the block loads no weights, so the forward runs untrained weights to print shapes, not to
    predict anything."""
    if mod.trains or mod.optimizers:
        return False
    block = main_block(mod, call)
    return block is not None and bool(mod.classes) and not any(
        isinstance(n, ast.Call) and _LOADS.match((dotted(n.func) or "").rsplit(".", 1)[-1])
        and not _CONFIG.match(dotted(n.func) or "") for n in walk(block))


def _read_first(loop: ast.AST, names: set[str]) -> bool:
    """The first statement of the loop's body that mentions one of ``names`` reads it (``loss2 =
    crit(outputs, t)`` at the top, ``outputs = model(x)`` at the end): a value carried to the next
    iteration, not one each iteration makes afresh."""
    names = names - {"_"}
    return bool(names) and _first_mention(getattr(loop, "body", []), names) == "read"


def _first_mention(block: list[ast.stmt], names: set[str]) -> str | None:
    for stmt in block:
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):  # its statements in order
            head = [getattr(stmt, k) for k in ("test", "iter", "target") if hasattr(stmt, k)]
            if any(isinstance(n, ast.Name) and n.id in names for h in head for n in walk(h)):
                return "read"
            inner = [*stmt.body, *getattr(stmt, "orelse", []), *(x for h in getattr(stmt, "handlers", [])
                                                                 for x in h.body), *getattr(stmt, "finalbody", [])]
            if (found := _first_mention(inner, names)) is not None:
                return found
            continue
        mentions = [n for n in walk(stmt) if isinstance(n, ast.Name) and n.id in names]
        if mentions:
            stored = isinstance(stmt, ast.Assign) and all(isinstance(n.ctx, ast.Store) for n in mentions)
            return "written" if stored else "read"
    return None
