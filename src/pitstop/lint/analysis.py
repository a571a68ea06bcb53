"""What the rules know about a file: import aliases, scopes, loops, and which names hold
graph-attached tensors inside a loop. One parse, a few linear walks; no type inference."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pitstop.lint.tree import children, walk, walk_local

NO_GRAD = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.inference_mode",
           "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"}
DETACHING = {"item", "detach", "detach_", "tolist", "numpy", "__float__", "__int__"}
NUMBER_FUNCS = {"float", "int", "bool", "str", "len", "print", "round", "abs", "repr", "format",
                "to_numpy", "to_np", "tonumpy"}  # Python values, and the usual tensor-to-array helpers: no graph
SAFE_ATTRS = {"data", "shape", "dtype", "device", "requires_grad", "ndim", "is_cuda", "grad_fn", "size"}
# what a forward call looks like: the callee's last name (lower case: not a class) ends in one of these
MODEL_NAME = re.compile(r"(^|_)(model|[a-z]*net|net_?[gd]|network|mlp|cnn|dqn|criterion|crit|encoder|decoder|"
                        r"generator|discriminator|head|classifier|backbone|policy|critic|actor|rnn|lstm|gru|loss_?fn|"
                        r"loss_?func|[gd])\d*$")  # [a-z]*net: qnet, value_net, resnet
_NO_GRAD_NAME = re.compile(r"(^|_)(no_?grad|inference_mode)(_|$)")
EVAL_NAME = re.compile(r"^(eval|evaluate|validate|validation|valid|val|predict|infer|inference)(_|$)|"
                       r"(_eval|_evaluate|_validate|_validation|_val|_predict|_inference)$", re.I)
STAR_DEFAULTS = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "optim": "torch.optim"}
EVAL_LOADER = re.compile(r"(val|valid|test|eval|dev)", re.I)


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (``self.opt``), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def target_names(target: ast.AST) -> list[str]:
    """Names bound by an assignment target (tuples unpacked; attributes and subscripts skipped)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in target_names(elt)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


# nn.Module methods that return the module itself
RETURNS_SELF = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval",
                          "requires_grad_", "share_memory", "to_empty"})


@dataclass
class Module:
    """A parsed file with its import aliases and local definitions."""

    tree: ast.Module
    source: str
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    parents: dict[int, ast.AST] = field(default_factory=dict)
    optimizers: set[str] = field(default_factory=set)  # dotted names bound to torch.optim.X(...)
    trains: bool = False  # the file calls backward() somewhere
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)  # module-level classes
    constructed: dict[str, str] = field(default_factory=dict)  # name -> what was called to build it
    star: bool = False  # the file has a `from X import *`
    star_modules: list[str] = field(default_factory=list)  # the X of each
    bodies: dict[int, list[ast.AST]] = field(default_factory=dict)  # Module.body's cache
    view: Any = None  # what the project knows about this file (pitstop.lint.project.View), once built
    given_parameters: set[str] | None = None  # names whose .parameters() something reads (graph.py, lazily)

    calls: list[ast.Call] = field(default_factory=list)  # every call, in one walk
    loop_nodes: list[ast.AST] = field(default_factory=list)
    withs: list[ast.AST] = field(default_factory=list)
    defs: list[ast.AST] = field(default_factory=list)  # every function definition
    backwards: list[ast.Call] = field(default_factory=list)
    # ``torch.set_grad_enabled(flag)`` as a statement: id -> whether it turns autograd off
    grad_switches: dict[int, bool] = field(default_factory=dict)
    depth: int = 0  # how deep the tree nests (the module's statements are level 1); past MAX_DEPTH: PIT001

    @classmethod
    def of(cls, tree: ast.Module, source: str) -> Module:
        """One walk over the tree collects everything the rules look up."""
        m = cls(tree, source)
        local_defs: set[str] = set()
        parents = m.parents
        bodies = m.bodies  # every scope's walk_local, filled by this one walk
        bodies[id(tree)] = []
        stack: list[tuple[ast.AST, list[ast.AST], int]] = [(tree, bodies[id(tree)], 0)]
        copies: list[tuple[str, str]] = []  # ``single_mt = mt``: a second name for what was built
        stores: dict[str, int] = {}  # how often each plain name is assigned
        deepest = 0
        while stack:
            node, body, level = stack.pop()
            t = type(node)
            if t in _SCOPES:
                inner: list[ast.AST] = []
                bodies[id(node)] = inner
            else:
                inner = body
            if level > deepest:
                deepest = level
            for child in children(node):
                parents[id(child)] = node
                inner.append(child)
                stack.append((child, inner, level + 1))
            if t is ast.Call:
                m.calls.append(node)  # type: ignore[arg-type]
                if is_backward(node):
                    m.backwards.append(node)  # type: ignore[arg-type]
                    m.trains = True
            elif t is ast.Assign:
                asg: ast.Assign = node  # type: ignore[assignment]
                for tg in asg.targets:
                    if isinstance(tg, ast.Name):
                        stores[tg.id] = stores.get(tg.id, 0) + 1
                if isinstance(asg.value, ast.Name) and len(asg.targets) == 1 and isinstance(asg.targets[0], ast.Name):
                    copies.append((asg.targets[0].id, asg.value.id))  # ``single_mt = mt``
            elif t in (ast.For, ast.AsyncFor, ast.While):
                m.loop_nodes.append(node)
            elif t in (ast.With, ast.AsyncWith):
                m.withs.append(node)
            elif t is ast.Import:
                for a in node.names:  # type: ignore[attr-defined]
                    if a.asname:
                        m.aliases[a.asname] = a.name
                    else:
                        m.aliases[a.name.split(".")[0]] = a.name.split(".")[0]
            elif t is ast.ImportFrom:
                base = "." * node.level + (node.module or "")  # type: ignore[attr-defined]
                if any(a.name == "*" for a in node.names):  # type: ignore[attr-defined]
                    m.star = True
                    m.star_modules.append(base)
                for a in node.names:  # type: ignore[attr-defined]
                    if a.name != "*" and base:  # relative ones keep their dots: never a torch name
                        m.aliases[a.asname or a.name] = f"{base}.{a.name}" if base.strip(".") else base + a.name
            elif t in (ast.FunctionDef, ast.AsyncFunctionDef):
                m.defs.append(node)
                m.functions.setdefault(node.name, node)  # type: ignore[attr-defined, arg-type]
                if parents.get(id(node)) is tree:
                    local_defs.add(node.name)  # type: ignore[attr-defined]
            elif t is ast.ClassDef and parents.get(id(node)) is tree:
                local_defs.add(node.name)  # type: ignore[attr-defined]
                m.classes[node.name] = node  # type: ignore[attr-defined, assignment]
        m.depth = deepest
        if m.star:  # `from model import *` (which imports torch): the usual names mean what they usually do
            for name, qual in STAR_DEFAULTS.items():
                m.aliases.setdefault(name, qual)
        for name in local_defs:  # a module-level def shadows an import of the same name
            m.aliases.pop(name, None)
        class_copies: dict[str, str] = {}
        for name, source in copies:  # ``Exp = Exp_Main`` (bound once): a second name for an imported or local class
            if stores.get(name) == 1 and name not in m.aliases and name not in local_defs:
                if source in m.aliases and source[:1].isupper():
                    m.aliases[name] = m.aliases[source]
                elif source in m.classes:
                    class_copies[name] = source
        m.calls.sort(key=lambda c: (c.lineno, c.col_offset))
        for node in m.calls:
            parent = parents.get(id(node))
            if isinstance(parent, ast.Expr) and node.args and isinstance(node.args[0], ast.Constant) \
                    and (m.qualname(node.func) or "").endswith("set_grad_enabled"):
                m.grad_switches[id(parent)] = node.args[0].value is False
            if isinstance(parent, ast.Assign) and parent.value is node:
                q = m.qualname(node.func) or ""
                if q.startswith("torch.optim.") and not q.startswith("torch.optim.lr_scheduler"):
                    m.optimizers.update(d for t in parent.targets if (d := dotted(t)))
                built = node
                while isinstance(built.func, ast.Attribute) and built.func.attr in RETURNS_SELF \
                        and isinstance(built.func.value, ast.Call):
                    built = built.func.value  # ``Net(...).to(device)`` is a Net
                if built is not node:
                    q = m.qualname(built.func) or ""
                callee = q or dotted(built.func) or ""
                callee = class_copies.get(callee, callee)
                local = dotted(built.func) or callee  # as written: `model = model.to(dev)` keeps what it was,
                given = {dotted(a) for a in built.args}
                for target in parent.targets:  # `model = Model()` from a module named model does not
                    if (d := dotted(target)) and callee and not local.startswith(d + "."):
                        if d in given and d in m.constructed:
                            continue  # `dlrm = quantize_dynamic(dlrm, ...)`: a wrapper keeps what it wraps
                        m.constructed[d] = callee
        for name, source in copies:
            if source in m.constructed:
                m.constructed.setdefault(name, m.constructed[source])
        return m

    def body(self, scope: ast.AST) -> list[ast.AST]:
        """``walk_local(scope)`` as a list, walked once per scope and kept (rules and the index share it)."""
        found = self.bodies.get(id(scope))
        if found is None:
            found = self.bodies[id(scope)] = list(walk_local(scope))
        return found

    def enclosing_loops(self, node: ast.AST) -> list[ast.AST]:
        """Loops around ``node`` inside its own function, innermost first."""
        found: list[ast.AST] = []
        cur = self.parents.get(id(node))
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                       ast.Lambda)):
            if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
                found.append(cur)
            cur = self.parents.get(id(cur))
        return found

    def qualname(self, node: ast.AST) -> str | None:
        """The qualified name an expression refers to through the imports (``cp.checkpoint`` ->
        ``torch.utils.checkpoint.checkpoint``), or None when it is not an imported name."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def is_no_grad(self, expr: ast.AST) -> bool:
        """``torch.no_grad()``, ``torch.inference_mode()`` (called or not) or ``set_grad_enabled(False)``."""
        call = expr if isinstance(expr, ast.Call) else None
        q = self.qualname(call.func if call else expr) or ""
        if q in NO_GRAD:
            return not (call and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value is False)
        if q in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and call and call.args:
            return isinstance(call.args[0], ast.Constant) and call.args[0].value is False
        # a project's own alias or wrapper (``no_grad = contextmanager_to_decorator(th.no_grad)``, ``@tu.no_grad``,
        # MVSNet's ``@make_nograd_func``)
        return not q.startswith("torch.") and bool(_NO_GRAD_NAME.search(
            (dotted(call.func if call else expr) or "").rsplit(".", 1)[-1]))

    def under_no_grad(self, node: ast.AST, stop: ast.AST | None = None) -> ast.AST | None:
        """The enclosing ``with no_grad()`` statement or no_grad-decorated function, if any; or the
        ``torch.set_grad_enabled(False)`` statement that runs before it in an enclosing block (the last
        such switch there; one that turns autograd back on ends it)."""
        cur: ast.AST | None = node
        while cur is not None and cur is not stop:
            parent = self.parents.get(id(cur))
            if isinstance(parent, (ast.With, ast.AsyncWith)) and cur in parent.body \
                    and any(self.is_no_grad(item.context_expr) for item in parent.items):
                return parent
            if self.grad_switches and isinstance(cur, ast.stmt) and (off := self._switched_off(parent, cur)):
                return off
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in parent.decorator_list:
                    if self.is_no_grad(dec):
                        return dec
                return None
            cur = parent
        return None

    def _switched_off(self, parent: ast.AST | None, stmt: ast.stmt) -> ast.stmt | None:
        """The ``set_grad_enabled(False)`` statement last switching autograd before ``stmt`` in its block."""
        block = block_of(parent, stmt)
        for before in reversed(block[:next(i for i, s in enumerate(block) if s is stmt)] if block else []):
            off = self.grad_switches.get(id(before))
            if off is not None:
                return before if off else None
        return None

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """The nodes around ``node``, innermost first, up to the module."""
        cur = self.parents.get(id(node))
        while cur is not None:
            yield cur
            cur = self.parents.get(id(cur))

    def enclosing_function(self, node: ast.AST) -> ast.AST:
        cur = self.parents.get(id(node))
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            cur = self.parents.get(id(cur))
        return cur or self.tree


def mode_switch(call: ast.AST) -> str | None:
    """"eval" for ``m.eval()`` and ``m.train(False)``, "train" for ``m.train()`` and ``m.train(True)``;
    None for anything else (``m.train(flag)``: not known here)."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    if call.func.attr == "eval":
        return None if args else "eval"
    if call.func.attr != "train" or len(args) > 1:
        return None
    if not args:
        return "train"
    flag = args[0]
    return ("train" if flag.value else "eval") if isinstance(flag, ast.Constant) and isinstance(flag.value, bool) \
        else None


def method_calls(scope: ast.AST, attr: str, into_defs: bool = False) -> list[ast.Call]:
    """Calls ``X.attr(...)`` under ``scope``."""
    return [n for n in walk_local(scope, into_defs) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr == attr]


def backward_targets(call: ast.Call, mod: Module) -> list[ast.AST]:
    """What a backward call differentiates: ``loss.backward()`` -> loss;
    ``scaler.scale(loss).backward()`` -> loss; ``torch.autograd.backward(loss)``,
    ``accelerator.backward(loss)``, ``self.manual_backward(loss)`` -> loss."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("backward", "manual_backward"):
        return list(call.args[:1]) if isinstance(func, ast.Name) and func.id == "manual_backward" else []
    base = func.value
    if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr == "scale" and base.args:
        return [base.args[0]]
    owner = (dotted(base) or "").rsplit(".", 1)[-1]
    if func.attr == "manual_backward" or mod.qualname(base) == "torch.autograd" \
            or owner in ("accelerator", "fabric", "engine", "trainer", "model_engine"):
        return list(call.args[:1])
    return [base]


def is_backward(call: ast.AST) -> bool:
    return isinstance(call, ast.Call) and (
        (isinstance(call.func, ast.Attribute) and call.func.attr in ("backward", "manual_backward"))
        or (isinstance(call.func, ast.Name) and call.func.id == "manual_backward"))


def is_step(call: ast.AST, mod: Module) -> bool:
    """An optimizer step: ``opt.step()`` on a name bound to torch.optim.X(...) or named like an
    optimizer (not a scheduler), or ``scaler.step(opt)``."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
        return False
    recv = dotted(call.func.value) or ""
    if recv in mod.optimizers:
        return True
    last = recv.rsplit(".", 1)[-1].lower()
    if "sched" in last or last.startswith("lr") or "warmup" in last:
        return False
    return "opt" in last or "scaler" in last


def clears_grads(scope: ast.AST, mod: Module, seen: set[str] | None = None) -> bool:
    """``zero_grad()``, ``p.grad = None``, ``p.grad.zero_()`` (or ``.data.zero_()``) under scope,
    closures included, or in a local function it calls or passes (an LBFGS closure)."""
    seen = seen if seen is not None else set()
    for n in walk_local(scope, into_defs=True):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "zero_grad" or (n.func.attr in ("zero_", "detach_", "fill_")
                                              and "grad" in (dotted(n.func.value) or "").split(".")):
                return True
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets):
                return True
        if isinstance(n, ast.Call):
            callees = [n.func, *n.args]
            for c in callees:
                name = c.id if isinstance(c, ast.Name) else None
                if name and name in mod.functions and name not in seen:
                    seen.add(name)
                    if clears_grads(mod.functions[name], mod, seen):
                        return True
    return False


def loops(scope: ast.AST) -> list[ast.AST]:
    return [n for n in walk_local(scope) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]


def assigned_in(loop: ast.AST, name: str) -> bool:
    """Whether ``name`` is (re)bound by a plain assignment inside the loop body (a list built and
    consumed in one iteration)."""
    for n in walk_local(loop):
        if isinstance(n, ast.Assign) and any(name in target_names(t) for t in n.targets):
            return True
    return False


def block_of(parent: ast.AST | None, stmt: ast.AST) -> list[ast.stmt] | None:
    """The statement list of ``parent`` that holds ``stmt`` (an ``if``'s body and its ``else`` are two
    lists; so are a loop's body and its ``else``, a ``try``'s body and its ``finally``), or None."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None
