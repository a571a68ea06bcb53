"""Per-file facts for the project index: a summary of every function and every call site of a
function that may live in the project, taken from the file's one parse (``analysis.Module``)."""

from __future__ import annotations

import ast
import bisect
import builtins
import re
from dataclasses import dataclass, field

from pitstop.lint import shapes
from pitstop.lint.analysis import MODEL_NAME, Module, dotted, is_backward, is_step, mode_switch
from pitstop.lint.flow import Flow
from pitstop.lint.graph import GraphNames
from pitstop.lint.reach import Sources, in_comprehension, shares_graph
from pitstop.lint.shapes import GENERIC_METHODS, built_here, cut, guarded, module_returned, softmaxed, untrained_branch
from pitstop.lint.tree import walk

Ref = tuple[str, str]  # ("local", "train_step" or "Trainer.fit"), ("qual", "utils.evaluate"), ("star", "evaluate")
# calls into these packages are never project functions
EXTERNAL = ("torch", "numpy", "np", "os", "sys", "math", "re", "json", "time", "random", "collections", "typing",
            "functools", "itertools", "logging", "argparse", "pathlib", "copy", "pickle", "shutil", "subprocess",
            "torchvision", "transformers", "tqdm", "matplotlib", "scipy", "sklearn", "pandas", "PIL", "wandb")


@dataclass
class Fn:
    """What one function does by itself (the project adds what its callees do)."""

    key: str
    line: int
    params: list[str]
    backward: bool = False  # runs backward()
    step: bool = False  # runs an optimizer step
    zeroes: bool = False  # clears gradients
    sets_eval: bool = False
    sets_train: bool = False
    no_grad: bool = False  # decorated with no_grad / inference_mode
    forwards: bool = False  # model forward calls with autograd on
    quiet: bool = False  # opens no_grad around its own work and trains nothing (``sample()`` of PixelCNN)
    returns_graph: bool = False  # returns a graph-attached tensor
    returns_no_graph: bool = False  # every return is a number or an array (``x.item()``, ``t.numpy()``)
    returns_model: bool = False  # every return is a module it loaded or switched (``model.load_state_dict``)
    returns_softmax: bool = False  # every return is a softmax: probabilities (``shapes.softmaxed``)
    graph_positions: tuple[int, ...] | None = None  # when every return is a tuple: the graph-attached places
    retain: tuple[tuple[int, int], ...] = ()  # backward(retain_graph=True) calls no later backward reuses
    gates: tuple[str, ...] = ()  # parameters every backward is conditional on (``if adjust: loss.backward()``)
    refs: list[Ref] = field(default_factory=list)  # what it calls
    return_refs: list[Ref] = field(default_factory=list)  # calls whose result it returns
    accumulates: tuple[int, ...] = ()  # parameter places it adds to a total on its object (``shapes.accumulated``)
    arg_flow: tuple[str, ...] | None = None  # makes no graph itself: the parameters whose graph reaches a return


@dataclass
class Site:
    """One call of a (possibly) project function."""

    ref: Ref
    caller: str | None  # the calling function's key; None at module level
    line: int
    loop: bool  # inside a loop of the caller
    loop_refs: list[Ref]  # the project-function calls of its loop, in order (shared by the loop's sites)
    later_from: int  # loop_refs[later_from:] come after it in the same iteration
    later_backward: bool  # a backward()/autograd.grad after it in the same iteration
    no_grad: bool  # under no_grad / inference_mode
    mode: str | None  # "eval" / "train": the caller's last mode switch before the call
    model_args: tuple[int, ...]  # parameter positions that receive a model
    result_used: bool = True  # its value reaches a backward, escapes or is returned in the caller
    evaluates: bool = False  # handed a validation/test loader or phase ("val_loader", phase="validation")
    off: tuple[str, ...] = ()  # keywords passed False or None (``model.train(x, adjust=False)``)
    result_trains: bool = False  # its value reaches a backward or an update in the caller
    consts: tuple[tuple[str, object], ...] = ()  # constant arguments: (name, value); ("#k", value) by place


def enclosing_class(mod: Module, node: ast.AST) -> str | None:
    """The class whose method ``node`` is in (the innermost function's owner)."""
    cur = mod.parents.get(id(node))
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        cur = mod.parents.get(id(cur))
    owner = mod.parents.get(id(cur)) if cur is not None else None
    return owner.name if isinstance(owner, ast.ClassDef) else None


def fn_key(mod: Module, fn: ast.AST) -> str:
    owner = mod.parents.get(id(fn))
    name: str = fn.name  # type: ignore[attr-defined]
    return f"{owner.name}.{name}" if isinstance(owner, ast.ClassDef) else name


def ref_of(call: ast.Call, mod: Module) -> Ref | None:
    """How a call names a function that may be the project's, or None."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in mod.functions and func.id not in mod.aliases:
            return ("local", func.id)
        q = mod.aliases.get(func.id)
        if q is None and mod.star and not hasattr(builtins, func.id):
            return ("star", func.id)  # `from evaluation import *`: perhaps one of that module's functions
        return ("qual", q) if q and q.split(".")[0] not in EXTERNAL else None
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = enclosing_class(mod, call)
            return ("local", f"{cls}.{func.attr}") if cls else None
        built = mod.constructed.get(dotted(func.value) or "")
        if built is not None and (built.rpartition(".")[2][:1].isupper() or (
                (built.split(".")[0] not in EXTERNAL and built in mod.functions) or built in mod.aliases.values())):
            return ("method", f"{built}:{func.attr}")  # model = CharLSTM(...); trainer = build_trainer(...)
        q = mod.qualname(func)
        if q is None and func.attr not in GENERIC_METHODS and not func.attr.startswith("_") \
                and (d := dotted(func.value) or "").startswith("self.") and "." not in d[5:]:
            return ("attr", f"{d}.{func.attr}")  # self.task_helper.eval_step(b): an object of unknown type
        return ("qual", q) if q and q.split(".")[0] not in EXTERNAL else None
    return None


def _retain(fn: ast.AST, body: list[ast.AST], mod: Module) -> tuple[tuple[int, int], ...]:
    """The positions of the ``backward(retain_graph=True)`` calls outside any loop of the function
    that no later backward of the function runs over again (a new forward's graph does not count;
    a gradient call or an unknown graph does)."""
    grads: list[ast.Call] = sorted((n for n in body if shapes.grad_call(n, mod)),  # type: ignore[misc]
                                   key=lambda n: (n.lineno, n.col_offset))
    found: list[tuple[int, int]] = []
    sources: Sources | None = None
    for k, call in enumerate(grads):
        kw = next((k for k in call.keywords if k.arg == "retain_graph"), None)
        if not is_backward(call) or kw is None or not (isinstance(kw.value, ast.Constant) and kw.value.value is True) \
                or mod.enclosing_loops(call) or in_comprehension(mod, call):
            continue
        later = grads[k + 1:]
        if any(not is_backward(n) for n in later):
            continue  # torch.autograd.grad after it: not followed
        if later:
            sources = sources or Sources(fn, mod)
            if any(shares_graph(sources, call, n) for n in later):
                continue
        found.append((call.lineno, call.col_offset))
    return tuple(found)


def _gates(fn: ast.AST, backwards: list[ast.Call], mod: Module, params: set[str]) -> tuple[str, ...]:
    """The parameters named in the ``if`` tests around every backward of the function."""
    common: set[str] | None = None
    for call in backwards:
        names: set[str] = set()
        cur = mod.parents.get(id(call))
        while cur is not None and cur is not fn:
            if isinstance(cur, ast.If):
                names |= {n.id for n in walk(cur.test) if isinstance(n, ast.Name)} & params
            cur = mod.parents.get(id(cur))
        common = names if common is None else common & names
    return tuple(sorted(common or ()))


def _zeroes(body: list[ast.AST]) -> bool:
    """``zero_grad()``, ``p.grad = None``, ``p.grad.zero_()`` in the body (helpers it calls are the
    project's business)."""
    for n in body:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
                n.func.attr == "zero_grad" or (n.func.attr in ("zero_", "detach_", "fill_", "requires_grad_")
                                               and "grad" in (dotted(n.func.value) or "").split("."))):
            return True
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in n.targets):
            return True
    return False


def _graph_source(call: ast.Call, mod: Module) -> bool:
    """A call that may make a graph-attached tensor: a model-like callee, torch.nn.functional, or a
    project function (its own summary decides)."""
    name = dotted(call.func) or ""
    last = name.rsplit(".", 1)[-1].lower()
    return bool(MODEL_NAME.search(last)) or (mod.qualname(call.func) or "").startswith("torch.nn.functional") \
        or ref_of(call, mod) is not None or mod.constructed.get(name) in mod.classes  # dlrm = DLRM_Net(...)


def _from_project(expr: ast.AST, at: ast.AST, graph: GraphNames, mod: Module) -> bool:
    """``expr`` is the result of a project function's call (directly or through the name's last
    assignment before ``at``): whether it carries a graph is that function's summary's to say."""
    if isinstance(expr, ast.Name):
        found = graph.reaching(expr.id, at)
        expr = found.value if found is not None else expr
    return isinstance(expr, ast.Call) and ref_of(expr, mod) is not None


def _numbers(body: list[ast.AST], values: list[ast.expr], mod: Module | None = None, calls: int = 0) -> bool:
    """Whether every one of ``values`` is a Python number: a constant, ``float()``/``int()``/``len()``
    ..., ``.item()``/``.tolist()``/``.size(0)``, what numpy returns, arithmetic of numbers, or a local name
    every binding of which in the function is one (a loop or ``with`` target, an unpacking, a parameter:
    not known, so not)."""
    unknown = ast.Pass()  # a binding whose value is not followed
    bound: dict[str, list[ast.AST]] = {}
    seen: set[int] = set()  # the Name nodes bound by an assignment statement
    for n in body:
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for leaf in walk(t) if not isinstance(t, ast.Subscript) else ():  # a[i] += v: no rebinding
                    if isinstance(leaf, ast.Name):
                        seen.add(id(leaf))
                        simple = isinstance(t, ast.Name) and n.value is not None
                        bound.setdefault(leaf.id, []).append(n.value if simple else unknown)  # type: ignore[arg-type]
    for n in body:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in seen:
            bound.setdefault(n.id, []).append(unknown)  # for, with, walrus, comprehension targets

    def number(e: ast.AST, depth: int) -> bool:
        if depth > 8:
            return False
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float))
        if isinstance(e, ast.Call):
            f = e.func
            return (isinstance(f, ast.Name) and f.id in ("float", "int", "len", "round", "bool")) or \
                (isinstance(f, ast.Attribute) and (f.attr in ("item", "tolist", "__float__", "__int__", "numel", "dim")
                                                   or (f.attr == "size" and bool(e.args)))) or \
                (isinstance(f, ast.Name) and _local_number(f.id, mod, calls)) or \
                (mod is not None and (mod.qualname(f) or "").startswith(("numpy.", "math.")))  # np.float(c) / n
        if isinstance(e, ast.BinOp):
            return number(e.left, depth + 1) and number(e.right, depth + 1)
        if isinstance(e, ast.UnaryOp):
            return number(e.operand, depth + 1)
        if isinstance(e, ast.Name):
            found = bound.get(e.id)
            return bool(found) and all(number(v, depth + 1) for v in found)  # type: ignore[union-attr]
        return False

    return all(number(v, 0) for v in values)


def _local_number(name: str, mod: Module | None, calls: int) -> bool:
    """A function of this file (``get_F1`` calling ``get_sensitivity``) whose every return is a number
    (followed 4 calls deep)."""
    fn = mod.functions.get(name) if mod is not None and calls < 4 else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or mod is None:
        return False
    body = mod.body(fn)
    returns = [n.value for n in body if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and _numbers(body, returns, mod, calls + 1)


def _summarise(mod: Module, fn: ast.FunctionDef | ast.AsyncFunctionDef, key: str) -> Fn:
    body = mod.body(fn)
    calls = [n for n in body if isinstance(n, ast.Call)]
    a = fn.args
    out = Fn(key, fn.lineno, [x.arg for x in [*a.posonlyargs, *a.args]])
    out.backward = any(is_backward(c) for c in calls)
    out.step = any(is_step(c, mod) for c in calls)
    out.zeroes = _zeroes(body)
    for c in calls:
        mode = mode_switch(c)
        if mode == "eval" and not built_here(mod, fn, dotted(c.func.value)):  # type: ignore[attr-defined]
            out.sets_eval = True
        elif isinstance(c.func, ast.Attribute) and c.func.attr == "train":  # train() or train(flag)
            out.sets_train = True
        r = ref_of(c, mod)
        if r is not None:
            out.refs.append(r)
    out.no_grad = any(mod.is_no_grad(d) for d in fn.decorator_list) or guarded(mod, body, calls)
    quiet = [mod.under_no_grad(c) is not None for c in calls]
    out.quiet = out.no_grad or (not out.backward and not out.step and any(quiet)
                                and not any(_graph_source(c, mod) and not q for c, q in zip(calls, quiet, strict=True)))
    out.retain = _retain(fn, body, mod) if out.backward else ()
    out.gates = _gates(fn, [c for c in calls if is_backward(c)], mod, set(out.params)) if out.backward else ()
    returns = [n for n in body if isinstance(n, ast.Return) and n.value is not None]
    out.returns_no_graph = bool(returns) and all(_numbers(body, [r.value], mod) or cut(r.value, mod)  # type: ignore
                                                 for r in returns)
    out.returns_model = bool(returns) and all(module_returned(body, r.value) for r in returns)  # type: ignore
    out.returns_softmax = softmaxed(mod, body, returns)
    if not returns or out.no_grad or not (out.backward or any(_graph_source(c, mod) for c in calls)):
        if returns and not out.no_grad and not out.returns_no_graph:
            out.arg_flow = shapes.arg_flow(fn, mod, out.params, calls, returns)
        return out  # nothing in it makes a graph-attached tensor of its own
    graph = GraphNames(fn, mod)
    returned: set[str] = set()
    positions: set[int] | None = set()
    for ret in returns:
        value: ast.AST = ret.value  # type: ignore[assignment]
        attached = graph.carries(value, ret) and mod.under_no_grad(ret) is None
        out.returns_graph = out.returns_graph or attached
        if isinstance(value, ast.Tuple) and positions is not None:
            # a place holds a graph when it carries one here, or when a project function makes it
            # (its own summary decides, transitively): `return loss, n_correct.item()` -> (0,)
            positions.update(k for k, e in enumerate(value.elts)
                             if graph.carries(e, ret) or _from_project(e, ret, graph, mod))
        elif attached or _from_project(value, ret, graph, mod):
            positions = None
        for v in (value.elts if isinstance(value, ast.Tuple) else [value]):
            if isinstance(v, ast.Name):
                returned.add(v.id)
            elif isinstance(v, ast.Call) and (ref := ref_of(v, mod)) is not None:
                out.return_refs.append(ref)
    out.graph_positions = tuple(sorted(positions)) if positions else None
    for n in body:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and any(
                isinstance(t, ast.Name) and t.id in returned for t in n.targets):
            ref = ref_of(n.value, mod)
            if ref is not None:
                out.return_refs.append(ref)
    return out


# a validation/test loader or dataset handed over (val_loader, testloader, loader_test, valid_dl)
_EVAL_ARG = re.compile(r"^((val|valid|validation|test|testing|eval|evaluation|dev)_?(loader|dataloader|dl|data|"
                       r"dataset|ds|set|iter|batches)|(loader|dataloader|dl|data)_?(val|valid|test|eval|dev))$", re.I)
# an evaluation phase named by a string: fit(..., phase="validation"), run_epoch(model, "test")
_EVAL_PHASE = {"val", "valid", "validate", "validation", "test", "testing", "eval", "evaluation", "dev"}
_TRAIN_ARG = re.compile(r"train", re.I)


def _evaluates(call: ast.Call) -> bool:
    """The call hands over a validation/test loader or names an evaluation phase, and nothing named
    like training data: ``one_epoch(model, loss_fn, val_loader)``, ``fit(..., phase="validation")``."""
    values = [*call.args, *(k.value for k in call.keywords)]
    names = [d.rsplit(".", 1)[-1] for a in values if (d := dotted(a))]
    phases = [a.value.lower() for a in values if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return (any(_EVAL_ARG.match(n) for n in names) or any(p in _EVAL_PHASE for p in phases)) \
        and not any(_TRAIN_ARG.search(n) for n in names) and not any(_TRAIN_ARG.search(p) for p in phases)


def _local_models(mod: Module) -> set[str]:
    return {d for call in mod.calls if (d := dotted(call.func)) and MODEL_NAME.search(d.rsplit(".", 1)[-1])}


@dataclass
class _LoopCalls:
    """The project-function calls of one loop in order, and where its last backward is: built once
    per loop, shared by its call sites (memory and time linear in the loop's size)."""

    positions: list[tuple[int, int]]
    refs: list[Ref]
    last_grad: tuple[int, int]

    @classmethod
    def of(cls, loop: ast.AST, mod: Module, cache: dict[int, _LoopCalls]) -> _LoopCalls:
        if id(loop) not in cache:
            calls = sorted((n for n in mod.body(loop) if isinstance(n, ast.Call)),
                           key=lambda n: (n.lineno, n.col_offset))
            found = [((n.lineno, n.col_offset), r) for n in calls if (r := ref_of(n, mod)) is not None]
            grads = [(n.lineno, n.col_offset) for n in calls if shapes.grad_call(n, mod)]
            cache[id(loop)] = cls([p for p, _ in found], [r for _, r in found], max(grads, default=(0, 0)))
        return cache[id(loop)]


_NO_LOOP = _LoopCalls([], [], (0, 0))


def _consts(call: ast.Call, offset: int) -> tuple[tuple[str, object], ...]:
    """Every argument the call passes, by place or name, with its value when constant (``run_epoch(epoch,
    cross_valid=True)``, ``run("test")``, ``run(loader, mode=ModeType.TRAIN)``) or ``shapes.UNKNOWN``."""
    found: list[tuple[str, object]] = [(f"#{k + offset}", shapes.constant(a)) if not isinstance(a, ast.Starred)
                                       else ("**", shapes.UNKNOWN) for k, a in enumerate(call.args)]
    found += [(k.arg or "**", shapes.constant(k.value)) for k in call.keywords]
    return tuple(found)


def index_functions(mod: Module) -> tuple[dict[str, Fn], list[Site]]:
    """Every function's summary and every call site of a possibly-project function."""
    functions: dict[str, Fn] = {}
    for fn in mod.defs:
        key = fn_key(mod, fn)
        if key not in functions:
            functions[key] = _summarise(mod, fn, key)  # type: ignore[arg-type]
    sites: list[Site] = []
    modes: dict[int, list[tuple[tuple[int, int], str]]] = {}
    loop_calls: dict[int, _LoopCalls] = {}
    models = _local_models(mod)
    flows: dict[int, Flow] = {}
    for call in mod.calls:
        ref = ref_of(call, mod)
        if ref is None:
            continue
        scope = mod.enclosing_function(call)
        if id(scope) not in modes:
            modes[id(scope)] = sorted(((c.lineno, c.col_offset), mode) for c in mod.body(scope)
                                      if isinstance(c, ast.Call) and (mode := mode_switch(c)) is not None)
        marks = modes[id(scope)]
        pos = (call.lineno, call.col_offset)
        before = bisect.bisect_left(marks, (pos, ""))
        loops = mod.enclosing_loops(call)
        loop = _LoopCalls.of(loops[0], mod, loop_calls) if loops else _NO_LOOP
        later_from = bisect.bisect_right(loop.positions, pos)
        later_backward = pos < loop.last_grad
        offset = 1 if (ref[0] == "local" and "." in ref[1]) or ref[0] in ("attr", "method") else 0  # self
        self_at = 1 if ref[0] in ("method", "attr") or (ref[0] == "local" and "." in ref[1]) else 0
        model_args = tuple(k + offset for k, arg in enumerate(call.args)
                           if (d := dotted(arg)) and (d in models or MODEL_NAME.search(d.rsplit(".", 1)[-1])))
        caller = fn_key(mod, scope) if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if id(scope) not in flows:
            flows[id(scope)] = Flow(scope, mod)
        sites.append(Site(ref, caller, call.lineno, bool(loops), loop.refs, later_from, later_backward,
                          mod.under_no_grad(call) is not None,
                          untrained_branch(mod, call) or (marks[before - 1][1] if before else None), model_args,
                          flows[id(scope)].fate(call) != "dead", _evaluates(call),
                          tuple(k.arg for k in call.keywords if k.arg and isinstance(k.value, ast.Constant)
                                and k.value.value in (False, None)), flows[id(scope)].trains(call),
                          _consts(call, self_at)))
    return functions, sites
