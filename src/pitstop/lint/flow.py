"""Where a value goes: does the result of a forward pass ever reach a backward?

One scope (a function body or the module's top level) at a time, no type inference: names are
linked by the assignments between them (``loss = crit(out, y)`` links ``out`` to ``loss``), except
through what turns a tensor into numbers (``.item()``, ``.data``, ``float()``, ``.numpy()``) and,
between names, through ``.detach()`` (``t = teacher(x)`` then ``loss(s, t.detach())``: the teacher's
graph never reaches the backward); a forward detached where it is made (``fake = G(z).detach()``)
is followed to where that name goes, as a target computed for a loss is. Sinks are what backward runs on
(``loss.backward()``, ``torch.autograd.grad``, a project function that runs backward, a call named
like an update step), what is kept on an object (escapes the scope) and what is returned. A forward
whose value reaches none of them built a graph nothing uses. ``after=`` follows only what comes
after a statement in the source, so that a name an earlier training step reused does not count."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Literal

from pitstop.lint.analysis import DETACHING, NUMBER_FUNCS, SAFE_ATTRS, Module, block_of, dotted, is_backward
from pitstop.lint.graph import NO_GRAPH_METHODS, indices, reduction
from pitstop.lint.tree import children, walk

Fate = Literal["live", "returned", "dead"]
# a call that consumes a graph for training: its arguments are sinks (update_params, not save_updated_image)
SINK_CALL = re.compile(r"backward|^((train|training|optimi[sz]er|optim|opt|update|sgd|learn)_?)?step$|"
                       r"update(?!d)|(^|_)fit$|optimi[sz]e|minimize|accumulate|^scale$|scaler$", re.I)
# methods called to keep what they are given (a replay memory, a rollout buffer, a list on an object)
STORE_CALL = re.compile(r"^(push\w*|put\w*|add|append\w*|extend|insert|store\w*|record\w*|remember|memorize|"
                        r"cache\w*|register\w*|set_\w+|save_\w+)$")
# where a forward's own expression stops mattering: numbers and arrays. ``.detach()`` there does not stop
# it: a detached target (a GAN's fake batch, a DQN's next-state values) still feeds the loss it was made for
CUTS = DETACHING - {"detach", "detach_"}
_LIST_ADD = ("append", "extend", "insert", "add", "appendleft")  # what ``_call`` links into a local list
_STOP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _no_graph_call(call: ast.Call) -> bool:
    """``out.argmax(1)``, ``torch.argmax(out)``, ``pred.eq(y)``, ``torch.multinomial(probs, 1)``: indices,
    comparisons and integers, never attached to a graph; and numpy's functions, which make arrays (a tensor
    that needs grad is refused there)."""
    f = call.func
    return isinstance(f, ast.Attribute) and (f.attr in NO_GRAPH_METHODS or f.attr == "multinomial" or (
        isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy")))  # np.argpartition(scores): an array


def carried(expr: ast.AST | None, cut: Callable[[ast.Call], bool] | None = None) -> Iterator[str]:
    """Names whose value flows into ``expr``'s value (not through what detaches, nor through a call
    ``cut`` says returns no graph)."""
    if expr is None:
        return
    if isinstance(expr, ast.Name):
        yield expr.id
    elif indices(expr):
        return
    elif isinstance(expr, ast.Call):
        f = expr.func
        if (isinstance(f, ast.Attribute) and f.attr in DETACHING) or (  # names do not flow through .detach()
                isinstance(f, ast.Name) and f.id in NUMBER_FUNCS) or _no_graph_call(expr) or (
                cut is not None and cut(expr)):
            return
        if isinstance(f, ast.Attribute):
            yield from carried(f.value, cut)
        for a in [*expr.args, *(k.value for k in expr.keywords)]:
            yield from carried(a, cut)
    elif isinstance(expr, ast.Attribute):
        if expr.attr not in SAFE_ATTRS:
            yield from carried(expr.value, cut)
    elif isinstance(expr, ast.Subscript):
        yield from carried(expr.value, cut)
    elif not isinstance(expr, (ast.Compare, ast.Constant, ast.JoinedStr, ast.Lambda, ast.BoolOp)):
        for c in children(expr):
            if isinstance(c, ast.expr):
                yield from carried(c, cut)


def _targets(t: ast.AST) -> tuple[list[str], bool]:
    """(names a target binds, whether it stores onto an object: an attribute)."""
    if isinstance(t, ast.Name):
        return [t.id], False
    if isinstance(t, (ast.Tuple, ast.List)):
        names, escapes = [], False
        for e in t.elts:
            n, s = _targets(e.value if isinstance(e, ast.Starred) else e)
            names += n
            escapes = escapes or s
        return names, escapes
    if isinstance(t, ast.Subscript):
        root = t.value
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        return ([root.id], False) if isinstance(root, ast.Name) and isinstance(t.value, ast.Name) else ([], True)
    return [], True  # self.x = ..., obj.attr = ...


def _reads(stmt: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(stmt))


class Flow:
    """Links and sinks of one scope; ``fate(expr)`` says where an expression's value ends."""

    def __init__(self, scope: ast.AST, mod: Module, after: ast.stmt | ast.expr | None = None) -> None:
        """``after``: follow only what comes after that node in the source, so that a name an
        earlier training step reused (in the same loop too) does not count."""
        self.mod, self.scope = mod, scope
        view = mod.view
        self._cut = view.returns_no_graph if view is not None else None  # utils.to_np(t): no graph comes back
        self.sources: dict[str, set[str]] = {}  # target -> names flowing into it
        live: set[str] = set()
        sunk: set[str] = set()  # given to a backward or an update (not merely kept)
        ret: set[str] = set()
        start = after.lineno if after is not None else 0
        # ``get = lambda i: hidden[i][idx[i]]``: calling ``get`` reads what its body names
        self.lambdas = {t.id for n in mod.body(scope) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
                        for t in n.targets if isinstance(t, ast.Name)}
        for n in mod.body(scope):
            line = getattr(n, "lineno", None)
            if after is not None and line is not None and line < start:
                continue
            if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                names = set(self._carried(n.value.body if isinstance(n.value, ast.Lambda) else n.value))
                for t in targets:
                    if isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(n.value, ast.Call) \
                            and reduction(n.value):
                        t = t.elts[0]  # values, indices = out.max(1): the indices carry nothing
                    bound, escapes = _targets(t)
                    if escapes:
                        live |= names
                    for b in bound:
                        self.sources.setdefault(b, set()).update(names)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                for b in _targets(n.target)[0]:
                    self.sources.setdefault(b, set()).update(self._carried(n.iter))
            elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                for b in _targets(n.optional_vars)[0]:
                    self.sources.setdefault(b, set()).update(self._carried(n.context_expr))
            elif isinstance(n, ast.Return) or isinstance(n, (ast.Yield, ast.YieldFrom)):
                ret.update(self._carried(n.value))
            elif isinstance(n, ast.Call):
                self._call(n, live, sunk)
        self.live = self._closure(live)
        self.trained = self._closure(sunk)
        self.returned = self._closure(ret) - self.live

    def _call(self, n: ast.Call, live: set[str], sunk: set[str]) -> None:
        f = n.func
        args = [*n.args, *(k.value for k in n.keywords)]
        if isinstance(f, ast.Attribute) and f.attr in ("append", "extend", "insert", "add", "put", "appendleft") \
                and isinstance(f.value, ast.Name) and n.args:
            self.sources.setdefault(f.value.id, set()).update(self._carried(n.args[-1]))
        elif (strict := self.sink(n, strict=True)) or self.sink(n):  # what it differentiates: its arguments
            given = {x for a in [f, *args] for x in self._carried(a)}  # and its receiver (``loss.backward()``)
            live.update(given)
            if strict:
                sunk.update(given)
        elif self.stores(n):  # what it keeps: its arguments (``ax.set_title(...)`` keeps nothing of ``ax``)
            live.update(x for a in args for x in self._carried(a))
        elif (receiver := self.receiver(n)) is not None and args:
            # ``loss.eval_batch(out, y)`` then ``loss.backward()``: a method of a local object may keep
            # what it is given, so the argument goes where the object goes
            self.sources.setdefault(receiver, set()).update(x for a in args for x in self._carried(a))

    def _carried(self, expr: ast.AST | None) -> Iterator[str]:
        yield from carried(expr, self._cut)
        if self.lambdas and expr is not None:
            yield from (c.func.id for c in walk(expr) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                        and c.func.id in self.lambdas)

    def receiver(self, call: ast.Call) -> str | None:
        """The local name a method is called on (``acc.update(...)``: ``acc``), not ``self`` (its
        methods are the project's, followed by the project view) nor an imported module's function."""
        f = call.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id not in ("self", "cls") \
                and self.mod.qualname(f) is None:
            return f.value.id
        return None

    def stores(self, call: ast.Call) -> bool:
        """A method called to keep what it is given (``memory.push(s, a)``, ``policy.rewards.append(r)``,
        ``pi.put_data(...)``): it escapes the scope. Functions of imported modules are not."""
        f = call.func
        return isinstance(f, ast.Attribute) and bool(STORE_CALL.match(f.attr)) and self.mod.qualname(f) is None \
            and bool(call.args or call.keywords)

    def sink(self, call: ast.Call, strict: bool = False) -> bool:
        """A call that differentiates or trains on what it is given; ``strict``: certainly so (a
        backward, a gradient, a call given an optimizer, a project function that runs backward), not
        one only named like an update (``meter.update(acc)`` is not)."""
        if is_backward(call) or self.mod.qualname(call.func) in ("torch.autograd.grad", "torch.autograd.backward"):
            return True
        last = (dotted(call.func) or "").rsplit(".", 1)[-1]
        view = self.mod.view
        if not strict and last and SINK_CALL.search(last):
            fid = view.callee(call) if view is not None else None
            if fid is None or view.project.fact("backward", fid) or view.project.fact("step", fid):
                return True  # named like an update; a project method of that name decides by what it does
        # (``losses.update(loss.item(), n)`` on an AverageMeter of the project updates no weights)
        if any((d := dotted(a)) and ("optim" in d.rsplit(".", 1)[-1].lower() or d in self.mod.optimizers)
               for a in [*call.args, *(k.value for k in call.keywords)]):
            return True  # loss_scaler(loss, optimizer, ...): a step on what it is given
        return view is not None and view.runs("backward", call)

    def _closure(self, seeds: set[str]) -> set[str]:
        out, todo = set(seeds), list(seeds)
        while todo:
            for s in self.sources.get(todo.pop(), ()):
                if s not in out:
                    out.add(s)
                    todo.append(s)
        return out

    def fate(self, expr: ast.AST, detach_cuts: bool = False) -> Fate:
        """Where the value of ``expr`` (inside this scope) ends: reaches a backward or escapes
        (live), is only returned (returned), or neither (dead). ``detach_cuts``: a ``.detach()`` on the
        way ends it too (in code that trains nothing, a detached target feeds no loss made here)."""
        parents = self.mod.parents
        node, parent = expr, parents.get(id(expr))
        while parent is not None:
            if isinstance(parent, ast.Call):
                if node is parent.func:  # x.method(...) with x = node's value... handled at Attribute
                    pass
                elif isinstance(parent.func, ast.Attribute) and parent.func.attr in _LIST_ADD \
                        and isinstance(parent.func.value, ast.Name) and parent.args and node is parent.args[-1]:
                    if self._cut_after_loop(parent, parent.func.value.id):
                        return "dead"  # values.append(v) in the loop, values = torch.cat(values).detach() after it
                    return self._names_fate([parent.func.value])  # outputs.append(out): where the list goes
                elif self.sink(parent) or self.stores(parent):
                    return "live"
                elif isinstance(parent.func, ast.Name) and parent.func.id in NUMBER_FUNCS:
                    return "dead"
                elif self._cut is not None and self._cut(parent):
                    return "dead"  # utils.to_np(action): a project helper whose every return is cut from the graph
            elif isinstance(parent, ast.Attribute):
                if parent.attr in SAFE_ATTRS or parent.attr in CUTS or (detach_cuts and parent.attr in DETACHING):
                    return "dead"
                if parent.attr == "backward":
                    return "live"
            elif isinstance(parent, (ast.Compare, ast.BoolOp, ast.JoinedStr, ast.FormattedValue)):
                return "dead"
            elif isinstance(parent, ast.stmt) or isinstance(parent, _STOP):
                return self._statement(node, parent)
            elif isinstance(parent, ast.comprehension) and node is parent.iter:
                return "live"  # a generator over model outputs: followed no further
            node, parent = parent, parents.get(id(parent))
        return "live"

    def _statement(self, node: ast.AST, stmt: ast.AST) -> Fate:
        if isinstance(stmt, ast.Return):
            return "returned"
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets: list[ast.expr] = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if isinstance(stmt, ast.Assign) and len(targets) == 1 and isinstance(targets[0], ast.Name) \
                    and self.cut_next(stmt, targets[0].id):
                return "dead"
            return self._names_fate(targets)
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and node is stmt.iter:
            return self._names_fate([stmt.target])
        if isinstance(stmt, ast.Expr):
            value = stmt.value
            if isinstance(value, (ast.Yield, ast.YieldFrom, ast.Await)):
                return "returned"
            if isinstance(value, ast.Call) and node is not value.func and (name := self.receiver(value)) is not None:
                return "live" if name in self.live else "returned" if name in self.returned else "dead"
            return "dead"
        if isinstance(stmt, (ast.If, ast.While, ast.Assert)):
            return "dead"
        return "live"

    def cut_next(self, stmt: ast.stmt, name: str, depth: int = 0) -> bool:
        """The next statement of the block that reads ``name`` rebinds it from a value that cuts the
        graph (``out = model(x)`` then ``out = torch.sigmoid(out).detach().numpy()``): the first value
        ends there, whatever the name holds later. Also through a chain of single readers: ``y1 =
        net(x)``, ``y = F.softmax(y1)`` (nothing else reads ``y1``), ``y = y.cpu().data.numpy()``, and
        through the name rebound from itself (``out = out[:, -1, :]``: the new value decides)."""
        block = block_of(self.mod.parents.get(id(stmt)), stmt)
        if block is None:
            return False
        k = next(i for i, x in enumerate(block) if x is stmt)
        for j, later in enumerate(block[k + 1:], k + 1):
            if not _reads(later, name):
                continue
            if not (isinstance(later, ast.Assign) and len(later.targets) == 1
                    and isinstance(later.targets[0], ast.Name)) \
                    or any(isinstance(c, ast.Call) and self.sink(c, strict=True) for c in walk(later.value)):
                return False  # g = torch.autograd.grad((log_probs * adv).mean(), params): the graph is used
            other = later.targets[0].id
            if other == name:  # rebound: from a cut value it ends here; transformed, the new value decides
                return name not in set(self._carried(later.value)) or (depth < 3 and self.cut_next(later, name,
                                                                                                   depth + 1))
            return depth < 3 and not any(_reads(s, name) for s in block[j + 1:]) \
                and self.cut_next(later, other, depth + 1)
        return False

    def _cut_after_loop(self, node: ast.AST, name: str) -> bool:
        """``name`` (a list filled inside a loop) is next read, after the loop, by a statement that
        rebinds it from a value that cuts the graph: what the loop collected ends there."""
        loops = self.mod.enclosing_loops(node)
        return bool(loops) and isinstance(loops[0], ast.stmt) and self.cut_next(loops[0], name)

    def trains(self, expr: ast.AST) -> bool:
        """The value of ``expr`` reaches a backward or an update in this scope (being kept on an
        object or returned does not count): a forward computed for training, whatever its
        function is named."""
        parents = self.mod.parents
        node, parent = expr, parents.get(id(expr))
        while parent is not None:
            if isinstance(parent, ast.Call) and node is not parent.func and self.sink(parent, strict=True):
                return True
            if isinstance(parent, ast.Attribute) and (parent.attr in SAFE_ATTRS or parent.attr in CUTS):
                return False
            if isinstance(parent, ast.Attribute) and parent.attr == "backward":
                return True
            if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                return any(n in self.trained for t in targets for n in _targets(t)[0])
            if isinstance(parent, ast.stmt) or isinstance(parent, _STOP):
                return False
            node, parent = parent, parents.get(id(parent))
        return False

    def _names_fate(self, targets: list[ast.expr]) -> Fate:
        fate: Fate = "dead"
        for t in targets:
            names, escapes = _targets(t)
            if escapes or any(n in self.live for n in names):
                return "live"
            if any(n in self.returned for n in names):
                fate = "returned"
        return fate
