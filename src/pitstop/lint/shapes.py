"""Shapes of code the project index records, decided from the syntax alone: module classes that hold
no weights, functions that open no_grad around their own work, values cut from the graph, factories
that hand out a model, calls only reached out of training mode, parameters a method adds to a total on
its object, functions that return a softmax, and method names too common to say which class an object
of unknown type is."""

from __future__ import annotations

import ast
import re

from pitstop.lint.analysis import RETURNS_SELF, Module, dotted, is_backward, target_names
from pitstop.lint.flow import carried
from pitstop.lint.graph import MODEL_METHOD, GraphNames
from pitstop.lint.tree import walk

# bases that make a class an nn.Module (qualified through the imports)
MODULE_BASES = re.compile(r"^(torch\.nn\.(modules\.module\.)?Module|torch\.nn\.(Sequential|ModuleList|ModuleDict)|"
                          r"(pytorch_)?lightning(\.pytorch)?\.(core\.)?(module\.)?LightningModule|"
                          r"transformers\.(modeling_utils\.)?PreTrainedModel|transformers\.\w+PreTrainedModel)$")
# well-known constructors of models (besides project classes): torchvision/timm/hub/HF
MODEL_FACTORIES = re.compile(r"^(torchvision\.models\.[\w.]+|timm\.create_model|torch\.hub\.load|torch\.jit\.load|"
                             r"transformers\.\w+(Model|For\w+|LMHeadModel)(\.from_pretrained)?|"
                             r"torch\.nn\.(parallel\.)?(DataParallel|DistributedDataParallel)|"
                             r"torch\.nn\.(Sequential|Linear|Conv[123]d|LSTM|GRU|RNN|Transformer\w*|Embedding))$")
# what else Hugging Face loads with from_pretrained: no weights, no forward (``tokenizer.decode(ids)``)
NOT_MODELS = re.compile(r"(Tokenizer\w*|Processor|FeatureExtractor|Config)\.from_pretrained$")
# method names too common to say which class an object of unknown type is
GENERIC_METHODS = {"forward", "step", "train", "eval", "update", "run", "apply", "get", "set", "reset", "save",
                   "load", "to", "cuda", "cpu", "parameters", "zero_grad", "backward", "call", "build", "setup",
                   "predict", "evaluate", "test", "fit", "sample", "init", "start", "stop", "close", "log",
                   "append", "extend", "add", "item", "items", "keys", "values", "format", "write", "read"}


_SUBMODULES = re.compile(r"(^|\.)[A-Z]\w*$|torchvision\.models|timm|from_pretrained|load_state_dict|register_parameter|"
                         r"add_module|deepcopy")


def weightless(cls: ast.ClassDef) -> bool:
    """A module class that builds no layer and holds no parameter (a metric such as ``PSNR``, a
    padding): no method calls a class (``nn.Conv2d``, ``nn.Parameter``, a project block) or loads
    weights, and ``self.x(...)`` calls only its own methods. Its forward records a graph only
    where its inputs carry one: calling it is no model's forward."""
    methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for n in walk(cls):
        if not isinstance(n, ast.Call):
            continue
        name = dotted(n.func) or ""
        if _SUBMODULES.search(name) or (name.startswith("self.") and name[5:] not in methods):
            return False
    return bool(methods)


_CHECKS = {"len", "print", "range", "int", "float", "str", "bool", "isinstance", "getattr", "hasattr", "min", "max",
           "enumerate", "zip", "list", "tuple", "dict", "set", "size", "dim", "numel", "item", "format", "tolist"}


def guarded(mod: Module, body: list[ast.AST], calls: list[ast.Call]) -> bool:
    """A function that opens no_grad / inference_mode around its work itself (``translate_sentence``:
    an assert on the input's size, one ``with torch.no_grad():`` holding every forward, then
    ``out.argmax(-1).tolist()``): each call outside such a block only checks or prints, or works on
    what the block computed."""
    if not any(mod.under_no_grad(c) is not None for c in calls):
        return False
    made = {t.id for n in body if isinstance(n, ast.Assign) and mod.under_no_grad(n) is not None
            for target in n.targets for t in walk(target) if isinstance(t, ast.Name)}

    def root(e: ast.AST) -> str | None:
        while isinstance(e, (ast.Attribute, ast.Subscript, ast.Call)):
            e = e.func if isinstance(e, ast.Call) else e.value
        return e.id if isinstance(e, ast.Name) else None

    return all(mod.under_no_grad(c) is not None or mod.is_no_grad(c)
               or (c.func.attr if isinstance(c.func, ast.Attribute) else dotted(c.func)) in _CHECKS
               or (isinstance(c.func, ast.Attribute) and root(c.func.value) in made) for c in calls)


def built_here(mod: Module, fn: ast.AST, name: str | None) -> bool:
    """``net = BiSeNet(n)`` (``net.cuda()``, ...) inside ``fn``, only ever called or given methods (never
    stored, passed or returned): a model the function makes for itself, its ``eval()`` not the caller's."""
    if not name or "." in name or (a := getattr(fn, "args", None)) is None:
        return False
    body = mod.body(fn)
    binds = [n for n in body if isinstance(n, ast.Assign) and any(name in target_names(t) for t in n.targets)]
    if name in {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} and not (
            binds and fn.body[0] is binds[0] and _copied(binds[0].value)):  # type: ignore[attr-defined]
        return False  # a parameter: the caller's model, unless the first statement copies it (``deepcopy(model)``)
    inside = {id(x) for b in binds for x in walk(b.value)}  # ``model = deepcopy(model)`` reads it once
    loose = any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in inside
                and not (isinstance(p := mod.parents.get(id(n)), ast.Attribute) or (isinstance(p, ast.Call)
                                                                                  and p.func is n)) for n in body)
    return bool(binds) and not loose and all(_constructs(b.value, name) for b in binds)


def _constructs(value: ast.AST, name: str) -> bool:
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in RETURNS_SELF:
        value = value.func.value  # BiSeNet(n).cuda(), net.to(device)
    last = (dotted(value.func) or "").rsplit(".", 1)[-1] if isinstance(value, ast.Call) else ""
    made = isinstance(value, ast.Call) and (last == "eval" or (  # eval("XvecTDNN(...)"), getattr(models, arch)(...)
        isinstance(value.func, ast.Call) and dotted(value.func.func) == "getattr"))
    return (isinstance(value, ast.Name) and value.id == name) or last[:1].isupper() or _copied(value) or made


def _copied(value: ast.AST) -> bool:
    return isinstance(value, ast.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] == "deepcopy"


def cut(value: ast.AST, mod: Module) -> bool:
    """A value with no graph whatever went in: None, ``t.cpu().detach().numpy()``, ``x.tolist()``,
    ``np.array(...)`` (``def to_np(t)`` of an RL codebase); not ``.detach()``, whose tensor may still
    feed a loss (a target computed for it)."""
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.IfExp):  # ``var.cpu().data.numpy() if USE_CUDA else var.data.numpy()``
        return cut(value.body, mod) and cut(value.orelse, mod)
    if isinstance(value, ast.Subscript):  # ``var.view(-1).data.tolist()[0]``: an element of what has no graph
        return cut(value.value, mod)
    return isinstance(value, ast.Call) and (
        (isinstance(value.func, ast.Attribute) and value.func.attr in ("numpy", "tolist", "item"))
        or (mod.qualname(value.func) or "").startswith("numpy."))


_MODULE_METHODS = {"load_state_dict", "eval", "train", "parameters", "named_parameters", "requires_grad_"}


def module_returned(body: list[ast.AST], value: ast.AST) -> bool:
    """``return model`` (or ``model.to(device)``) where the function calls a method only a module has on
    it (``model.load_state_dict(ckpt)``, ``model.eval()``): a factory that hands out a model."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("to", "cuda"):
        value = value.func.value
    return isinstance(value, ast.Name) and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MODULE_METHODS
        and isinstance(n.func.value, ast.Name) and n.func.value.id == value.id for n in body)


def untrained_branch(mod: Module, call: ast.Call) -> str | None:
    """"eval" for a call only reached with the module out of training mode: in the ``else`` of ``if
    self.training [or ...]:`` or under ``if not self.training [and ...]:`` (a model's forward that
    generates when evaluated, MusicTransformer's)."""
    child: ast.AST = call
    cur = mod.parents.get(id(call))
    while cur is not None and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, ast.If):
            in_else = any(child is x for x in cur.orelse)
            if in_else and _training_or(cur.test):
                return "eval"
            if not in_else and any(isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not)
                                   and dotted(t.operand) == "self.training" for t in _ands(cur.test)):
                return "eval"
        block = next((b for b in (getattr(cur, f, None) for f in ("body", "orelse", "finalbody"))
                      if isinstance(b, list) and any(child is x for x in b)), [])
        for stmt in block[:next((k for k, x in enumerate(block) if x is child), 0)]:
            if isinstance(stmt, ast.If) and not stmt.orelse and _training_or(stmt.test) and stmt.body \
                    and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                return "eval"  # ``if self.training: return ...`` above it: what follows runs out of training
        child, cur = cur, mod.parents.get(id(cur))
    return None


def _training_or(test: ast.expr) -> bool:
    """``self.training`` or ``self.training or ...``: false only out of training mode."""
    either = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    return any(dotted(t) == "self.training" for t in either)


def _ands(test: ast.expr) -> list[ast.expr]:
    return test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


def accumulated(fn: ast.FunctionDef | ast.AsyncFunctionDef, body: list[ast.AST]) -> tuple[int, ...]:
    """The parameter places whose value a method adds to a total on its object (AverageMeter's
    ``update(self, val, n=1)``: ``self.sum += val * n`` -> (1,), ``n`` being a count), never through
    ``.item()`` or ``float()``, and never a parameter the method rebinds first (``val = float(val)``)."""
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    rebound = {x for n in body if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) for x in target_names(t)}
    found: set[int] = set()
    # a count (``self.count += n``, ``n=1``): the weight of a value, never a graph's
    defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults, strict=True))
    counts = {n.value.id for n in body if isinstance(n, ast.AugAssign) and isinstance(n.value, ast.Name)} \
        | {k for k, d in defaults.items() if isinstance(d, ast.Constant) and type(d.value) is int}
    for n in body:
        if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and (dotted(n.target) or "").startswith("self."):
            names = set(carried(n.value))
            found |= {k for k, name in enumerate(params)
                      if k and name in names and name not in rebound and name not in counts}
    return tuple(sorted(found))


SOFTMAX_MODULES = ("torch.nn.Softmax", "torch.nn.modules.activation.Softmax")


def softmax_of(node: ast.AST, mod: Module) -> tuple[ast.AST, ast.AST | None] | None:
    """(x, dim) for ``torch.softmax(x, dim)``, ``F.softmax``, ``x.softmax(dim)`` or a constructed
    ``nn.Softmax`` called on x (its dim None)."""
    if not isinstance(node, ast.Call):
        return None
    q = mod.qualname(node.func) or ""
    if q in ("torch.softmax", "torch.nn.functional.softmax") and node.args:
        return node.args[0], node.args[1] if len(node.args) > 1 else _keyword(node, "dim")
    if isinstance(node.func, ast.Attribute) and node.func.attr == "softmax" and not q:
        return node.func.value, node.args[0] if node.args else _keyword(node, "dim")
    if mod.constructed.get(dotted(node.func) or "") in SOFTMAX_MODULES and len(node.args) == 1:
        return node.args[0], None  # ``self.softmax = nn.Softmax(dim=1)`` ... ``self.softmax(scores)``
    return None


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


_SAME = ("view", "reshape", "squeeze", "unsqueeze", "contiguous", "permute", "transpose", "flatten")


def softmaxed(mod: Module, body: list[ast.AST], returns: list[ast.Return]) -> bool:
    """Every return is a softmax, made there or bound to the returned name just before
    (``prob = F.softmax(self.l3(n), dim=1)`` ... ``return prob``): probabilities, which a caller
    that takes their log should have asked for as log-probabilities."""
    if not returns:
        return False
    for ret in returns:
        value = ret.value
        if isinstance(value, ast.Name):
            binds = [n for n in body if isinstance(n, ast.Assign) and n.lineno < ret.lineno and any(
                isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
            value = max(binds, key=lambda n: n.lineno).value if binds else None
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SAME:
            value = value.func.value  # ``self.softmax(q.view(-1, n)).view(-1, a, n)``: the same probabilities
        if value is None or softmax_of(value, mod) is None:
            return False
    return True


UNKNOWN = object()  # an argument whose value the syntax does not tell


def constant(node: ast.AST) -> object:
    """The value an argument or default is known to hold: a literal, or an enum-like member
    (``ModeType.EVAL``, as ``("member", "ModeType.EVAL")``: distinct names, distinct members); else UNKNOWN."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id[:1].isupper() \
            and node.attr.isupper():
        return ("member", f"{node.value.id}.{node.attr}")
    return UNKNOWN


def on_a_name(call: ast.Call, mod: Module) -> tuple[str, str] | None:
    """``model.set_eval()`` on a parameter or a local whose type is not known (no import, no constructor
    here): as ``self.helper.method()`` is, a method of an object of unknown type, for the call graph's guess."""
    func = call.func
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name) or func.value.id == "self" \
            or func.attr in GENERIC_METHODS or func.attr.startswith("_") or func.value.id in mod.aliases \
            or mod.qualname(func) is not None:
        return None
    return ("attr", f"{func.value.id}.{func.attr}")


def arg_flow(fn: ast.FunctionDef | ast.AsyncFunctionDef, mod: Module, params: list[str], calls: list[ast.Call],
              returns: list[ast.Return]) -> tuple[str, ...] | None:
    """The parameters whose graph reaches what the function returns, each followed alone
    (``compute_score(logits, labels)`` that cuts the logits: ``labels``); None where that is not known
    (``*args``, a parameter it calls or runs a model's method of, what ``self`` holds, over six parameters)."""
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or not params or len(params) > 6 or any(_runs_param(c, params)
                                                                                  for c in calls):
        return None
    flow = tuple(p for p in params if any(GraphNames(fn, mod, frozenset({p})).carries(r.value, r)
                                          for r in returns if r.value is not None))
    return None if {"self", "cls"} & set(flow) else flow


def _runs_param(call: ast.Call, params: list[str]) -> bool:
    """``fn(x)``, ``ae.encode(x)``, ``agent.actor(s)`` with ``fn`` / ``ae`` / ``agent`` a parameter: what it
    returns may be a graph that no argument brought."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id in params
    root = f
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id in params and isinstance(f, ast.Attribute) and (
        not isinstance(f.value, ast.Name) or bool(MODEL_METHOD.match(f.attr)))


def grad_call(n: ast.AST, mod: Module) -> bool:
    """``loss.backward()`` or ``torch.autograd.grad(...)``."""
    return isinstance(n, ast.Call) and (is_backward(n) or mod.qualname(n.func) == "torch.autograd.grad")


def given_args(call: ast.Call, key: str, params: list[str], flow: tuple[str, ...]) -> list[ast.expr] | None:
    """The arguments of ``call`` (of the function ``key``) that its parameters ``flow`` receive; None for
    ``*args`` / ``**kwargs`` at the call."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    params = params[1:] if "." in key and params[:1] in (["self"], ["cls"]) else params
    given = dict(zip(params, call.args, strict=False)) | {k.arg: k.value for k in call.keywords if k.arg}
    return [v for p, v in given.items() if p in flow]
