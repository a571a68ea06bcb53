"""Which values carry an autograd graph, and which calls are a model's forward pass."""

from __future__ import annotations

import ast
import re
from typing import Any

from pitstop.lint.analysis import (
    DETACHING,
    MODEL_NAME,
    NUMBER_FUNCS,
    SAFE_ATTRS,
    Module,
    backward_targets,
    dotted,
    method_calls,
    target_names,
)
from pitstop.lint.tree import children

# a plain function that is the model (def model(t_u, w, b): return w * t_u + b)
_MODEL_FUNCTION = re.compile(r"(model|net|network|generator|discriminator|encoder|decoder|classifier|policy|"
                             r"critic|actor)\d*")
# tensor methods whose result has no graph (comparisons, indices, integer casts, sizes: Python ints)
NO_GRAPH_METHODS = {"eq", "ne", "lt", "gt", "le", "ge", "argmax", "argmin", "argsort", "isnan", "isinf", "isfinite",
                    "nonzero", "long", "int", "bool", "all", "any", "count_nonzero", "numel", "sign", "size", "dim",
                    "ndimension", "nelement", "stride", "element_size", "get_device", "is_contiguous"}
# what returns (values, indices): the indices carry no graph (``_, pred = torch.max(out, 1)``, ``out.max(1)[1]``)
_WITH_INDICES = {"max", "min", "sort", "topk", "kthvalue", "median", "mode"}


def indices(expr: ast.AST) -> bool:
    """``out.max(1)[1]``, ``torch.topk(out, 5)[1]``, ``out.max(1).indices``: the indices of a reduction."""
    if isinstance(expr, ast.Attribute):
        return expr.attr == "indices" and isinstance(expr.value, ast.Call) and reduction(expr.value)
    return isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and expr.slice.value == 1 \
        and isinstance(expr.value, ast.Call) and reduction(expr.value)


def reduction(call: ast.Call) -> bool:
    """A call of one of ``_WITH_INDICES`` with a dimension (``x.max()`` alone returns one value)."""
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr in _WITH_INDICES and (
        len(call.args) >= (2 if dotted(f.value) == "torch" else 1) or any(k.arg == "dim" for k in call.keywords)
        or f.attr in ("sort", "topk"))


# methods that run a model for inference when called on one (net.predict(x), model.generate(ids))
MODEL_METHOD = re.compile(r"^(forward|inverse|predict\w*|generate\w*|sample\w*|infer\w*|decode\w*|encode\w*|beam_?\w*|"
                          r"translate\w*|caption\w*|transcribe|detect\w*|embed\w*|greedy\w*|"
                          r"pi|q|v|act|get_action\w*|select_action\w*|policy|actor|critic|module)$")
LOSS_NAME = re.compile(r"(^|_)(criterion\w*|crit|loss_?fn|loss_?func(tion)?|loss|metric)\d*$", re.I)
CONSTRUCTOR = re.compile(r"^(create|build|make|get|load|init|new|setup|prepare|wrap|construct|compute|calc|calculate|"
                         # what is done to a model, not a model (serialize_model(m), save_model(m))
                         r"serialize|deserialize|save|copy|export|dump|print|summari[sz]e|count|freeze|unfreeze|"
                         r"swap|average|sync|convert|quantize|prune)_", re.I)


class GraphNames:
    """Names that hold graph-attached tensors inside one loop: what backward runs on, results of
    model / criterion / torch.nn.functional calls, and anything computed from them without
    ``.item()``, ``.detach()``, ``float()`` and the like."""

    def __init__(self, loop: ast.AST, mod: Module, seed: frozenset[str] = frozenset()) -> None:
        self.mod, self.loop = mod, loop
        self.names: set[str] = set(seed)  # seed: names taken as attached (a helper's parameter, for its summary)
        self.defs: dict[str, list[ast.Assign]] = {}  # name -> its plain assignments, in source order
        self.scalar: set[str] = set()  # backward() without arguments ran on them: one element
        self.backwarded: list[tuple[str, ast.Call]] = []  # (name, the backward() called on it)
        for call in method_calls(loop, "backward"):
            for t in backward_targets(call, mod):
                if isinstance(t, ast.Name):
                    self.names.add(t.id)
                    self.backwarded.append((t.id, call))
                    if not call.args and not any(k.arg in ("gradient", "grad_tensors") for k in call.keywords):
                        self.scalar.add(t.id)
        assigns = [n for n in mod.body(loop) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))]
        plain = sorted((a for a in assigns if isinstance(a, ast.Assign)), key=lambda a: (a.lineno, a.col_offset))
        for p in plain:
            for t in p.targets:
                for name in target_names(t):  # ``loss, metric = eval_batch(...)`` binds ``loss`` here too
                    self.defs.setdefault(name, []).append(p)
        self.augmented: dict[str, list[tuple[int, int]]] = {}  # name -> where ``name += ...`` runs
        for a in assigns:
            if isinstance(a, ast.AugAssign) and isinstance(a.target, ast.Name):
                self.augmented.setdefault(a.target.id, []).append((a.lineno, a.col_offset))
        for _ in range(3):  # to a fixed point (assignments may come in any order)
            before = len(self.names)
            for a in assigns:
                value = a.value
                if value is None:
                    continue
                targets = a.targets if isinstance(a, ast.Assign) else [a.target]
                if (self.carries(value, a) or self.model_call(value, a)) and mod.under_no_grad(a, loop) is None:
                    for t in targets:
                        self.names.update(self.bound(t, value))
            if len(self.names) == before:
                break

    def bound(self, target: ast.AST, value: ast.AST) -> list[str]:
        """The names of ``target`` that receive graph-attached values (``out, loss_value = step()``
        where the project function returns ``out, loss.item()``: only ``out``)."""
        view = self.mod.view
        if view is not None and isinstance(value, ast.Call) and isinstance(target, ast.Tuple):
            positions = view.graph_positions(value)
            if positions is not None:
                return [n for k, e in enumerate(target.elts) if k in positions for n in target_names(e)]
        return target_names(target)

    def model_call(self, value: ast.AST, at: ast.AST | None = None, depth: int = 0) -> bool:
        """A call of something named like a model, or of torch.nn.functional; a loss function
        (``criterion(out, y)``) when what it is given carries a graph."""
        if not isinstance(value, ast.Call):
            return False
        q = self.mod.qualname(value.func) or ""
        if q.startswith("torch.nn.functional."):
            return q != "torch.nn.functional.one_hot"  # integers in, integers out: no graph
        name = dotted(value.func) or ""
        if name.endswith(".forward") and name.count(".") == 1:
            name = name.removesuffix(".forward")  # model.forward(input_ids=x, labels=y): the model's call
        if LOSS_NAME.search(name.rsplit(".", 1)[-1]) and name not in self.mod.functions:
            return any(self.carries(a, at, depth) or self.model_call(a, at, depth + 1)
                       for a in [*value.args, *(k.value for k in value.keywords)])  # crit(model(x), y)
        view = self.mod.view
        if view is not None:
            if view.returns_graph(value):
                return True  # a project function that returns a graph-attached tensor
            if name in view.models:
                return True
        elif self.mod.constructed.get(name) in self.mod.classes:
            return True  # the index's own pass: ``dlrm = DLRM_Net(...)`` of this file (its view comes later)
        if name in self.mod.functions:
            return False  # a local helper, not a model
        last = name.rsplit(".", 1)[-1]
        named = (last == last.lower() and bool(MODEL_NAME.search(last)) and not CONSTRUCTOR.match(last)) \
            or bool(_GAN_NAME.fullmatch(last))  # (compute_metrics_for_model(df): what is done with a model)
        return bool(last) and named and not q.startswith("torch.")  # self.G(z): a GAN's model, as is_forward has it

    def carries(self, expr: ast.AST, at: ast.AST | None = None, depth: int = 0) -> bool:
        """Whether ``expr`` evaluates to something still attached to a graph name. With ``at``, a
        name is judged by its last plain assignment before ``at`` (``loss = loss.item()`` then
        ``losses.append(loss)`` is clean), outside no_grad."""
        if isinstance(expr, ast.Name):
            found = self.reaching(expr.id, at) if at is not None and depth < 6 else None
            if found is None:
                return expr.id in self.names
            if self.mod.under_no_grad(found, self.loop) is not None:
                return False
            if isinstance(found.value, ast.Call) and not self._builds_object(found.value) and any(
                    name == expr.id and self.reaching(name, call) is found for name, call in self.backwarded):
                return True  # l = self.calculate_loss(batch); l.backward(): what backward ran on has a graph
                # (not ``loss = self.loss``, a project Loss object whose own backward() IBM's seq2seq calls)
            if not any(isinstance(t, ast.Name) and t.id == expr.id for t in found.targets):  # an unpacking
                return expr.id in self.bound(found.targets[0], found.value) and (
                    self.carries(found.value, found, depth + 1) or self.model_call(found.value, found, depth + 1))
            return self.carries(found.value, found, depth + 1) or self.model_call(found.value, found, depth + 1)
        if isinstance(expr, ast.Call):
            f = expr.func
            if isinstance(f, ast.Attribute) and (f.attr in DETACHING or f.attr in NO_GRAPH_METHODS):
                return False
            if (isinstance(f, ast.Name) and f.id in NUMBER_FUNCS) or self.mod.qualname(f) in (
                    "torch.tensor", "torch.nn.functional.one_hot"):
                return False  # torch.tensor(x) copies into a new leaf, whatever x is; one_hot makes integers
            if self.mod.view is not None and self.mod.view.returns_no_graph(expr):
                return False  # get_accuracy(out, y) whose every return is float(...): a number, whatever it is given
            if self.mod.view is not None and (given := self.mod.view.flowing_args(expr)) is not None:
                return self.mod.view.returns_graph(expr) or any(self.carries(a, at, depth) for a in given)
                # score(pred, a.data): its own graph, and what of its arguments reaches its return
            if at is not None and self.model_call(expr, at, depth):
                return True  # crit(model(x), y): the model's output, inline
            if isinstance(f, ast.Attribute) and self.carries(f.value, at, depth):
                return True  # out.view(-1), a.add(b): what the method runs on
            if isinstance(f, ast.Name) and depth < 6 and (fn := self.defs.get(f.id)) \
                    and isinstance(fn[-1].value, ast.Lambda) and self.carries(fn[-1].value.body, at, depth + 1):
                return True  # get = lambda i: hidden[i][idx[i]]; torch.stack([get(i) for i in ...])
            return any(self.carries(a, at, depth) for a in [*expr.args, *(k.value for k in expr.keywords)])
        if isinstance(expr, ast.Attribute):
            return expr.attr not in SAFE_ATTRS and not indices(expr) and self.carries(expr.value, at, depth)
        if isinstance(expr, (ast.Compare, ast.Constant, ast.JoinedStr, ast.Lambda)):
            return False
        if isinstance(expr, ast.Subscript):
            return not indices(expr) and self.carries(expr.value, at, depth)  # out.max(1)[1]: the indices, no graph
        return any(self.carries(c, at, depth) for c in children(expr) if isinstance(c, ast.expr))

    def _builds_object(self, call: ast.Call) -> bool:
        """``Loss(...)``: a call of a class (the file's or the project's), not of a function or method."""
        name = dotted(call.func) or ""
        view = self.mod.view
        return name in self.mod.classes or (view is not None and view.is_class(name))

    def reaching(self, name: str, at: ast.AST) -> ast.Assign | None:
        """The last plain ``name = ...`` before ``at`` in the loop (None: none, or the name is
        also bound by an unpacking or ``+=``, which the name-level answer covers)."""
        pos = (at.lineno, at.col_offset)  # type: ignore[attr-defined]
        before = [a for a in self.defs.get(name, ()) if (a.lineno, a.col_offset) < pos]
        if not before:
            return None
        start = (before[-1].lineno, before[-1].col_offset)
        if any(start < p < pos for p in self.augmented.get(name, ())):
            return None  # total = 0, then total += loss: the name-level answer
        return before[-1]

    def culprit(self, expr: ast.AST) -> ast.Name | None:
        """The graph name ``expr`` is (for a fix), when it is exactly one."""
        return expr if isinstance(expr, ast.Name) and expr.id in self.names else None


def _on_model(func: ast.AST, models: set[str]) -> bool:
    """``self.model.finetune``: a method called on a model (by what built it, or by its name)."""
    recv = dotted(func.value) if isinstance(func, ast.Attribute) else None
    end = (recv or "").rsplit(".", 1)[-1]
    return recv is not None and (recv in models or (end == end.lower() and bool(MODEL_NAME.search(end))
                                                    and not LOSS_NAME.search(end)))


def _model_method(project: Any, method: str) -> bool:  # a pitstop.lint.project.Project
    """Every project method of that name belongs to a model class (an nn.Module subclass) and returns a
    graph-attached tensor (what its layers make), trains nothing and opens no no_grad."""
    found = project.methods.get(method, [])
    return bool(found) and not method.startswith("_") and all(
        (i, key.partition(".")[0]) in project.module_classes and project.fact("returns_graph", (i, key))
        and not project.files[i].functions[key].quiet and not project.fact("backward", (i, key))
        for i, key in found)


def _quiet_everywhere(project: Any, method: str) -> bool:  # a pitstop.lint.project.Project
    """Every project method of that name opens no_grad around its own work and trains nothing."""
    found = project.methods.get(method, [])
    return bool(found) and all(project.files[i].functions[k].quiet for i, k in found)


# a GAN's networks by the usual names (``self.G(z)``, ``netD(x)``): variables, not classes
_GAN_NAME = re.compile(r"(net_?)?[GD]\d*")


def is_forward(call: ast.Call, mod: Module) -> bool:
    """A model's forward pass: a call of a model (built from an nn.Module class or a well-known
    constructor, handed in where a model is, or named like one), or of an inference method on one
    (``net.predict(x)``). Not a loss, not torch's own functions, not a project function."""
    name = dotted(call.func)
    if not name:
        return _indexed_model(call.func, mod)
    view = mod.view
    models: set[str] = view.models if view is not None else set()
    last = name.rsplit(".", 1)[-1]
    if name not in models and not MODEL_NAME.search(last.lower()) and not MODEL_METHOD.match(last) \
            and name not in _given_parameters(mod) and not (view is not None and _on_model(call.func, models)
                                                            and _model_method(view.project, last)):
        return False  # the common case, decided without resolving anything
    if (mod.qualname(call.func) or "").startswith(("torch.", "torchvision.", "timm.", "torchaudio.")):
        return False  # torch's own functions, and model factories (``resnet18(pretrained=True)`` builds one)
    if LOSS_NAME.search(last):
        return False
    if name in models or name in _given_parameters(mod):
        return True  # built from a model constructor, or its .parameters() go to an optimizer (model_test)
    if CONSTRUCTOR.match(last):
        return False
    if isinstance(call.func, ast.Attribute):
        recv = dotted(call.func.value) or ""
        end = recv.rsplit(".", 1)[-1]
        fid = view.callee(call) if view is not None else None
        if fid is not None and view.plain_object(recv):
            return False  # local_model = LocalUpdate(...): local_model.inference(...) is a project method
        if fid is not None and view.project.files[fid[0]].functions[fid[1]].no_grad:
            return False  # translator.translate_sentence(x) opens no_grad around its forwards itself
        if fid is None and view is not None and _quiet_everywhere(view.project, call.func.attr):
            return False  # model.sample(...) of an unknown class, where every project sample() opens no_grad
        if recv in models or (end == end.lower() and MODEL_NAME.search(end) and not LOSS_NAME.search(end)):
            # a method of a model: the inference ones, and one that the project's model classes define to
            # return their sub-forwards' output (S3Rec's ``self.model.finetune(ids)``)
            return bool(MODEL_METHOD.match(call.func.attr)) or (view is not None and _model_method(view.project,
                                                                                                 call.func.attr))
        if recv.split(".")[0] not in ("self", "cls"):
            return False  # frame.head(10), parser.decoder(...): a method of something that is not a model
    if isinstance(call.func, ast.Name) and (name in mod.classes or (view is not None and view.is_class(name))):
        return False  # rnn_encoder_decoder(...) from `from rnn_encoder_decoder import *`: builds a model
    if name in mod.functions or (view is not None and view.callee(call) is not None):
        # a project function: a forward only when named like a model and it trains nothing itself
        # (def model(t_u, w, b): return w * t_u + b)
        return name in mod.functions and bool(_MODEL_FUNCTION.fullmatch(last)) \
            and not (view is not None and view.runs("backward", call))
    return (last == last.lower() and bool(MODEL_NAME.search(last))) or bool(_GAN_NAME.fullmatch(last))


# a collection of models by its plural name (``self.actors[i](obs)``, ``models[k](x)``, ``self.critics[a]``)
_MODELS_NAME = re.compile(r"(^|_)(models|nets|networks|actors|critics|policies|generators|discriminators|"
                          r"classifiers|learners|q_?nets)$")


def _indexed_model(func: ast.AST, mod: Module) -> bool:
    """``self.actors[i](obs)``: one model of a list or ModuleList of them, called (not a model's own
    layers, ``self.layers[k](h)``, which only make its forward's output)."""
    if not isinstance(func, ast.Subscript) or (holder := dotted(func.value)) is None:
        return False
    return bool(_MODELS_NAME.search(holder.rsplit(".", 1)[-1]))


def _given_parameters(mod: Module) -> set[str]:
    """Names (not ``self``) whose ``.parameters()`` / ``.named_parameters()`` the file reads: modules,
    whatever built them (``model_test = model_unet(U_Net, 3, 1)``; ``optim.Adam(model_test.parameters())``)."""
    if mod.given_parameters is None:
        mod.given_parameters = {d for c in mod.calls if isinstance(c.func, ast.Attribute) and not c.args
                                and c.func.attr in ("parameters", "named_parameters")
                                and (d := dotted(c.func.value)) and d.split(".")[0] not in ("self", "cls")}
    return mod.given_parameters

