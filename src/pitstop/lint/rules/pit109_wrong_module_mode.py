"""PIT109 wrong-module-mode."""

from __future__ import annotations

import ast
import re
from pathlib import PurePath
from typing import ClassVar

from pitstop.lint.analysis import EVAL_NAME, Module, dotted, is_backward, is_step, mode_switch, walk_local
from pitstop.lint.file_index import MODE_LAYERS
from pitstop.lint.graph import MODEL_METHOD
from pitstop.lint.project import FnId, Project
from pitstop.lint.project_facts import Site, fn_key
from pitstop.lint.rules.base import Context, Rule
from pitstop.lint.rules.common import eval_calls, evaluating_sites, forwards, train_calls, training_loops
from pitstop.lint.rules.pit401_loader_in_main_process import EVAL_DATA
from pitstop.lint.shapes import built_here
from pitstop.lint.tree import walk


class WrongModuleMode(Rule):
    """What it does:
        Finds `.eval()` in a training loop (directly or in a helper it calls, in any file) with no
        `.train()` in the loop; and an evaluation function (named eval/validate/predict/...) with
        forward passes, no backward and no `.eval()` of its own, when a caller anywhere in the
        project runs it in training mode (no `.eval()` before the call; a function no project code
        calls is left alone: its mode is its caller's); a script or function that trains, then
        evaluates (under `no_grad`, or in a loop over a loader named for evaluation, `for x, y in
        valloader:`) with no `.eval()` switch in between; and an inference script that
        loads trained weights into a model it built and runs it with no mode switch anywhere.

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
        "never": "`{fn}` evaluates without model.eval(), and nothing in the project ever calls eval(): dropout "
                 "stays active and batch-norm uses batch statistics",
        "eval-call": "`{fn}` evaluates here when called with a validation loader or phase ({where}), but "
                     "nothing puts the model in eval mode: dropout stays active and batch-norm uses batch statistics",
        "after-training": "`{fn}(...)` evaluates after training with no model.eval() in between: dropout stays "
                          "active and batch-norm uses batch statistics",
        "loaded": "`{fn}` gets trained weights (`{name}.load_state_dict`, line {line}) and runs here, but nothing "
                  "in this script puts it in eval mode: dropout stays active and batch-norm uses batch statistics "
                  "(call {name}.eval() after loading)",
    }

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        seen: set[int] = set()
        for loop, _ in training_loops(mod):
            if id(loop) in seen or not any(is_step(n, mod) for n in walk_local(loop)):
                continue
            evals = [c for c in walk_local(loop) if isinstance(c, ast.Call) and mode_switch(c) == "eval"
                     and not _teacher(mod, loop, dotted(c.func.value))]  # type: ignore[attr-defined]
            where = evals[0] if evals else _calls_eval_helper(loop, mod)
            if where is not None and not train_calls(loop):
                seen.add(id(loop))
                self.report(ctx, where, call=ctx.text(where))
        for fn in mod.defs:
            name: str = fn.name  # type: ignore[attr-defined]
            if not (EVAL_NAME.search(name) or _EVAL_LIKE.search(name)) or any(is_backward(n) for n in mod.body(fn)):
                self.evaluated_by_callers(ctx, fn)
                continue
            if eval_calls(fn) or not forwards(fn, mod) or self.trains_callers(ctx, fn) or _eval_at_import(mod, fn) \
                    or _calls_eval_helper(fn, mod) is not None:  # model = load_model(...), which calls eval()
                continue
            verdict = self.callers_mode(ctx, fn)
            if verdict is None and not EVAL_NAME.search(name) and isinstance(mod.parents.get(id(fn)), ast.ClassDef):
                continue  # a model's own generate()/sample(): its mode is the caller's business
            if verdict == "train":  # with no caller in the project, the mode it runs in is not known
                self.report(ctx, fn, variant="no-eval", fn=name)
            elif verdict is None and ctx.project is not None and _never_evaluated(ctx.project.project) \
                    and (fid := ctx.project.fn_id(fn_key(mod, fn))) is not None and ctx.project.project.sites_of(fid):
                # the project calls it (from an entry it does not call itself): no model is ever in eval mode
                self.report(ctx, fn, variant="never", fn=name)
        for scope in [mod.tree, *mod.defs]:
            self.evaluation_after_training(ctx, scope)
        self.gated_calls(ctx)
        self.loaded_without_eval(ctx)

    def loaded_without_eval(self, ctx: Context) -> None:
        """An inference script (it trains nothing) that loads trained weights into a model it built
        (``netG = Generator(p); netG.load_state_dict(ckpt)``) and runs it (``netG(noise)``,
        ``diffusion.sample(n)``), where nothing in the file, and no project function it calls,
        switches any model's mode: a freshly built module is in training mode, and loading weights
        does not change that. Only where the project has dropout or batch-norm layers."""
        mod, view = ctx.mod, ctx.project
        if mod.trains or mod.optimizers or "load_state_dict" not in mod.source or not _mode_layers(mod):
            return

        def switched(calls: list[ast.Call]) -> bool:
            return any(mode_switch(c) for c in calls) or (view is not None and any(
                view.runs("sets_eval", c) or view.runs("sets_train", c) or view.runs("backward", c) for c in calls))

        whole = switched(mod.calls)
        classes = [c for c in walk(mod.tree) if isinstance(c, ast.ClassDef)]
        for scope in [*([mod.tree, *mod.defs] if not whole else []), *classes]:
            # a class: ``self.net`` built and loaded in __init__, run by another method, switched by none
            attrs = isinstance(scope, ast.ClassDef)
            methods = [f for f in scope.body if isinstance(f, ast.FunctionDef)] \
                if isinstance(scope, ast.ClassDef) else [scope]
            body = [n for f in methods for n in mod.body(f) if isinstance(n, ast.Call)]
            if isinstance(scope, ast.ClassDef) and (
                    switched(body) or (view is not None and (view.i, scope.name) in view.project.module_classes)
                    or any("Module" in (dotted(b) or "") for b in scope.bases)):
                continue  # a model's own submodule follows the model's mode
            built = {d for f in methods
                     for n in mod.body(f) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                     and not (dotted(_base_call(n.value).func) or "").endswith(_PRETRAINED)
                     for t in n.targets if (d := dotted(t)) and (d.startswith("self.") and d.count(".") == 1
                                                                   if attrs else "." not in d)}
            loads: dict[str, int] = {}
            for c in body:
                if isinstance(c.func, ast.Attribute) and c.func.attr == "load_state_dict" \
                        and (d := dotted(c.func.value)) in built and not (attrs and _copied(c)):
                    loads.setdefault(d, c.lineno)
            for c in sorted(body, key=lambda n: (n.lineno, n.col_offset)):
                name = dotted(c.func) or ""
                base = name if name in loads else name.rpartition(".")[0] if isinstance(c.func, ast.Attribute) \
                    and MODEL_METHOD.match(c.func.attr) else ""
                if base not in loads or c.lineno <= loads[base]:
                    continue
                fid = view.callee(c) if view is not None else None
                if fid is None or not (EVAL_NAME.search(m := fid[1].rpartition(".")[2]) or _EVAL_LIKE.search(m)):
                    # (``netG.sample(n)`` of a project class is reported at its def: its caller's mode)
                    self.report(ctx, c, variant="loaded", fn=ctx.text(c.func), name=base, line=loads[base])

    def gated_calls(self, ctx: Context) -> None:
        """``model.train(x, adjust=False)``: a call into another file's function that trains only
        when a parameter allows it, passed False here, with no eval() before: an evaluation (or
        generation) pass in training mode."""
        view, mod = ctx.project, ctx.mod
        if view is None:
            return
        for call in mod.calls:
            off = {k.arg for k in call.keywords if isinstance(k.value, ast.Constant) and k.value.value in (False, None)}
            fid = view.callee(call) if off else None
            if fid is None or fid[0] == view.i:
                continue  # same file: evaluated_by_callers reports at the function's forward
            fn = view.project.files[fid[0]].functions[fid[1]]
            if not (off & set(fn.gates)) or view.project.fact("sets_eval", fid):
                continue
            marks = [c for c in mod.calls if mode_switch(c) is not None
                     and (c.lineno, c.col_offset) < (call.lineno, call.col_offset)
                     and mod.enclosing_function(c) is mod.enclosing_function(call)]
            if marks and mode_switch(marks[-1]) == "eval":
                continue
            self.report(ctx, call, variant="eval-call", fn=fid[1], where="this call")

    def evaluation_after_training(self, ctx: Context, scope: ast.AST) -> None:
        """A script or function that trains, then (after its training loop) evaluates under no_grad
        with no ``.eval()`` switch in between: the model is still in training mode."""
        mod = ctx.mod
        calls = [n for n in mod.body(scope) if isinstance(n, ast.Call)]
        trained = [(c.lineno, c.col_offset) for c in calls if is_backward(c)]
        if not trained:
            return
        marks = sorted(((c.lineno, c.col_offset), mode) for c in calls if (mode := mode_switch(c)) is not None)
        for call in forwards(scope, mod):
            pos = (call.lineno, call.col_offset)
            before = [mode for at, mode in marks if at < pos]
            if (mod.under_no_grad(call) is None and not _over_evaluation_data(mod, call)) or pos < min(trained) \
                    or (before and before[-1] == "eval") or pos < max(trained):
                continue  # a backward after it: targets for the next update (SAC's learn()), not an evaluation
            loops = mod.enclosing_loops(call)
            if loops and any(is_backward(n) for n in mod.body(loops[0])) and not (
                    _mode_layers(mod) and not any(is_backward(n) and mod.enclosing_loops(n)[:1] == loops[:1]
                                                  for n in mod.body(loops[0]))):
                continue  # inside the training loop itself: a look at the current batch, not the evaluation
            if scope is mod.tree:
                self.report(ctx, call, variant="after-training", fn=ctx.text(call.func))
            else:
                self.report(ctx, scope, variant="no-eval", fn=scope.name)  # type: ignore[attr-defined]
            return

    def evaluated_by_callers(self, ctx: Context, fn: ast.AST) -> None:
        """A function that trains or evaluates depending on its arguments (``one_epoch(model, loader,
        optimizer=None)``, ``fit(..., phase="validation")``), called with a validation/test loader
        or phase by a caller that did not switch to eval() first."""
        view, mod = ctx.project, ctx.mod
        fid = view.fn_id(fn_key(mod, fn)) if view is not None else None
        if view is None or fid is None:
            return
        info = view.project.files[fid[0]].functions[fid[1]]
        sites = [(i, s) for i, s in evaluating_sites(mod, fn, info, view.project.sites_of(fid)) if s.mode != "eval"]
        if not sites or eval_calls(fn) or not forwards(fn, mod) \
                or any(is_backward(n) and not _conditional(mod, n, fn) for n in mod.body(fn)):
            return
        i, site = sites[0]
        where = f"line {site.line}" if i == fid[0] else f"{PurePath(view.project.files[i].path).name}:{site.line}"
        self.report(ctx, forwards(fn, mod)[0], variant="eval-call", fn=fn.name,  # type: ignore[attr-defined]
                    where=where)

    def trains_callers(self, ctx: Context, fn: ast.AST) -> bool:
        """Some caller trains on what the function returns (PPO's ``policy.evaluate(states, actions)``
        re-computes log-probabilities for the loss): a step of training, whatever its name."""
        view = ctx.project
        fid = view.fn_id(fn_key(ctx.mod, fn)) if view is not None else None
        return fid is not None and any(s.result_trains for _, s in view.project.sites_of(fid))

    def callers_mode(self, ctx: Context, fn: ast.AST) -> str | None:
        """"train" when some caller in the project runs the function in training mode (its last
        switch before the call was train(), or none in a function that trains or at a script's top
        level), "eval" when every caller switched to eval() first, None when it has no callers."""
        view = ctx.project
        fid = view.fn_id(fn_key(ctx.mod, fn)) if view is not None else None
        return _mode(view.project, fid, 0) if fid is not None else None


_PRETRAINED = ("from_pretrained", "jit.load", "hub.load")


def _base_call(call: ast.Call) -> ast.Call:
    """``Net(cfg).to(device).cuda()``: the call the chain starts from (``Net(cfg)``)."""
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        call = call.func.value
    return call


def _mode(project: Project, fid: FnId, depth: int) -> str | None:
    """The module mode a function runs in, from its callers: the caller's last switch before the
    call; with none, the caller's own callers' (a script's top level starts in training mode, as a
    freshly built model does)."""
    sites = project.sites_of(fid)
    if _built_in_eval(project, fid):  # its object's models were put in eval mode when it was built
        return "train" if any(s.mode == "train" for _, s in sites) else "eval"
    if not sites or depth > 6:
        return None
    verdicts = set()
    for i, s in sites:
        before = _evaluated_before(project, i, s) if s.mode is None else None
        if s.mode is not None:
            verdicts.add(s.mode)
        elif before is not None:
            verdicts.add(before)
        elif s.caller is None or s.caller not in project.files[i].functions:
            verdicts.add("train")
        elif project.fact("backward", (i, s.caller)):
            verdicts.add("train")
        else:
            verdicts.add(_mode(project, (i, s.caller), depth + 1) or "unknown")
    if "train" in verdicts or verdicts == {"eval"}:
        return "train" if "train" in verdicts else "eval"
    return "maybe" if "maybe" in verdicts else None  # "maybe": a caller's model may be in either mode


def _built_in_eval(project: Project, fid: FnId) -> bool:
    """A method whose class's constructor puts models in eval mode and never back (an evaluator
    that builds ``Model(path, is_eval=True)``); also where it does so only under a condition (a
    finding needs the training mode certain)."""
    owner, _, method = fid[1].rpartition(".")
    init = (fid[0], f"{owner}.__init__")
    return bool(owner) and method != "__init__" and init[1] in project.files[fid[0]].functions \
        and project.fact("sets_eval", init) and not project.fact("sets_train", init)


def _evaluated_before(project: Project, i: int, site: Site) -> str | None:
    """"eval" when, before ``site`` in the same caller, a call of a project function puts a model in
    eval mode and never back (``Evaluate(path)`` whose constructor builds ``Model(path, is_eval=True)``);
    "maybe" when the function may leave it in either (``get_model(args, train=False)`` returns
    the model after ``model.eval()`` or after ``model.train()``, by its argument); None otherwise."""
    found = None
    for other in project.sites_in(i, site.caller):
        if other.line < site.line:
            fid = project.resolve(i, other.ref) or project.constructor(i, other.ref)
            if fid is not None and project.fact("sets_eval", fid):
                if not project.fact("sets_train", fid):
                    return "eval"
                found = "maybe"
    return found


# evaluation functions named otherwise: test(), sample(), generate(), translate()
_EVAL_LIKE = re.compile(r"^(test|testing|sample|samples|generate|translate)$|^test_(model|net|network|epoch)$|"
                        r"^(sample|generate)_(text|texts|image|images|name|names|sequence|sentence|sentences|samples?)$|"
                        r"^(run|do)_test$", re.I)


def _eval_at_import(mod: Module, fn: ast.AST) -> bool:
    """The file's top level puts the model the function reads as a global in eval mode, and nothing in
    the file switches it back (``model = checkpoint['model'].to(device); model.eval()`` above
    ``def translate(...)``): the function runs in eval mode whoever calls it."""
    top = {dotted(c.func.value) for c in mod.body(mod.tree)  # type: ignore[attr-defined]
           if isinstance(c, ast.Call) and mode_switch(c) == "eval"}
    read = {n.id for n in mod.body(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return bool(top & read) and not any(dotted(c.func.value) in top  # type: ignore[attr-defined]
                                        for c in train_calls(mod.tree))


def _never_evaluated(project: Project) -> bool:
    """A project with dropout or batch-norm layers where no file calls ``eval()`` on anything, nor loads a
    model that comes in eval mode (``from_pretrained``): every model it builds stays in training mode,
    whatever calls its evaluation."""
    return project.mode_layers and not any({"eval", "from_pretrained"} & f.attr_calls for f in project.files)


def _copied(call: ast.Call) -> bool:
    """``ema.load_state_dict(model.state_dict())``: weights copied from another module, not a checkpoint."""
    return bool(call.args) and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                   and n.func.attr == "state_dict" for n in walk(call.args[0]))


def _mode_layers(mod: Module) -> bool:
    """Dropout or batch-norm somewhere in the project (or this file, without one)."""
    view = mod.view
    return bool(view.project.mode_layers) if view is not None else bool(MODE_LAYERS.search(mod.source))


def _over_evaluation_data(mod: Module, call: ast.Call) -> bool:
    """The forward's innermost loop iterates a loader named for evaluation (``for x, y in valloader:``,
    ``enumerate(test_loader)``) and runs no backward: a validation pass, with autograd on or not."""
    loops = mod.enclosing_loops(call)
    if not loops or not isinstance(loops[0], (ast.For, ast.AsyncFor)) \
            or any(is_backward(n) for n in mod.body(loops[0])):
        return False
    it = loops[0].iter
    while isinstance(it, ast.Call) and it.args:  # enumerate(loader), tqdm(loader)
        it = it.args[0]
    return bool((d := dotted(it)) and EVAL_DATA.search(d.rsplit(".", 1)[-1]))


def _conditional(mod: Module, node: ast.AST, fn: ast.AST) -> bool:
    """``node`` sits under an ``if`` inside ``fn`` (a backward that only some calls run)."""
    cur = mod.parents.get(id(node))
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If):
            return True
        cur = mod.parents.get(id(cur))
    return False


def _teacher(mod: Module, loop: ast.AST, name: str | None) -> bool:
    """``swa_model.eval()`` before ``with torch.no_grad(): out2 = swa_model(x)``: a model the loop only
    runs without autograd (a teacher, an EMA copy), not the one it trains."""
    runs = [c for c in walk_local(loop) if isinstance(c, ast.Call) and name and dotted(c.func) == name]
    return bool(runs) and all(mod.under_no_grad(c, loop) is not None for c in runs)


def _calls_eval_helper(loop: ast.AST, mod: Module) -> ast.Call | None:
    """A call in the loop to a local function that sets a module to eval mode (not one handed only a
    copy built in the loop: ``eval_model = Yolov4(...)``, ``evaluate(eval_model, ...)``)."""
    fresh = {d for n in walk_local(loop) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
             and (dotted(n.value.func) or "a").rsplit(".", 1)[-1][:1].isupper() for t in n.targets if (d := dotted(t))}
    for n in walk_local(loop):
        if isinstance(n, ast.Call) and fresh and any(dotted(a) in fresh for a in n.args) and not any(
                (d := dotted(a)) and d not in fresh and mod.view is not None and d in mod.view.models for a in n.args):
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in mod.functions:
            fn = mod.functions[n.func.id]
            evals = [c for c in eval_calls(fn) if isinstance(c.func, ast.Attribute)
                     and not built_here(mod, fn, dotted(c.func.value))]  # its own model's eval() is not ours
            if evals and not train_calls(fn):
                return n
        if isinstance(n, ast.Call) and mod.view is not None and mod.view.runs("sets_eval", n) \
                and not mod.view.runs("sets_train", n):
            return n  # a project function (another file) that leaves the model in eval mode
    return None
