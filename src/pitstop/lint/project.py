"""The project: every file of one run, indexed once, so that rules see across functions and files.

Each file contributes a ``FileIndex`` (built from its one parse, then the tree may be dropped): its
module names, imports, classes, a summary of every function (runs backward / an optimizer step /
clears gradients, sets eval() or train(), is decorated with no_grad, runs model forwards with autograd
on, returns a graph-attached tensor, ends in a ``backward(retain_graph=True)``) and its call sites of
functions that may live in the project. ``Project`` resolves calls to functions (same file, imports,
relative imports, ``self.method``), nn.Module subclasses across files (transitively), and answers
transitive questions over the call graph with memoised walks: linear in the project's size."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pitstop.lint.analysis import Module, dotted
from pitstop.lint.file_index import FileIndex
from pitstop.lint.project_facts import Fn, Ref, Site, ref_of
from pitstop.lint.shapes import GENERIC_METHODS, MODEL_FACTORIES, MODULE_BASES, NOT_MODELS, given_args, on_a_name

FnId = tuple[int, str]  # (file number, function key)


@dataclass
class Project:
    """Every file's index, the resolved call graph and the transitive facts derived from it."""

    files: list[FileIndex] = field(default_factory=list)
    by_module: dict[str, list[int]] = field(default_factory=dict)
    module_classes: set[tuple[int, str]] = field(default_factory=set)
    callers: dict[FnId, list[tuple[int, Site]]] = field(default_factory=dict)
    model_params: dict[FnId, set[int]] = field(default_factory=dict)  # parameter positions given a model
    methods: dict[str, list[FnId]] = field(default_factory=dict)  # method name -> the project methods of that name
    model_functions: dict[int, set[str]] = field(default_factory=dict)  # file -> its functions in model_params
    retain_flagged: set[FnId] = field(default_factory=set)
    cuda: bool = False
    trains: bool = False
    mode_layers: bool = False  # some file mentions dropout or batch-norm
    _memo: dict[tuple[str, FnId], bool] = field(default_factory=dict)
    _found: dict[tuple[int, str], list[int]] = field(default_factory=dict)  # ``modules``'s answers
    _by_caller: dict[int, dict[str | None, list[Site]]] = field(default_factory=dict)  # ``sites_in``'s

    @classmethod
    def build(cls, files: Iterable[FileIndex]) -> Project:
        p = cls(list(files))
        for i, f in enumerate(p.files):
            for name in f.names:
                p.by_module.setdefault(name, []).append(i)
        p.cuda = any(f.cuda for f in p.files)
        p.mode_layers = any(f.mode_layers for f in p.files)
        p.trains = any(f.trains for f in p.files)
        p._find_module_classes()
        for i, f in enumerate(p.files):
            for key in f.functions:
                owner, _, name = key.rpartition(".")
                if owner and not name.startswith("__"):
                    p.methods.setdefault(name, []).append((i, key))
        for i, f in enumerate(p.files):
            for site in f.sites:
                target = p.resolve(i, site.ref)
                for fid in [target] if target is not None else p._duck(p._untyped(i, site.ref), p.methods):
                    p.callers.setdefault(fid, []).append((i, site))
                    if site.model_args:
                        p.model_params.setdefault(fid, set()).update(site.model_args)
                        p.model_functions.setdefault(fid[0], set()).add(fid[1])
        for i, f in enumerate(p.files):
            for site in f.sites:
                target = p.resolve(i, site.ref)
                if target is not None and site.loop and p.files[target[0]].functions[target[1]].retain \
                        and not site.later_backward and not any(p.fact("backward", p.resolve(i, r))
                                                                for r in site.loop_refs[site.later_from:]):
                    p.retain_flagged.add(target)
        return p

    # -- resolution --------------------------------------------------------------------------

    def modules(self, i: int, dotted_module: str) -> list[int]:
        """The project files a module name imported in file ``i`` names (relative ones from its package):
        asked for every call of every file, so worked out once per file and name."""
        if (i, dotted_module) not in self._found:
            self._found[i, dotted_module] = self._modules(i, dotted_module)
        return self._found[i, dotted_module]

    def _modules(self, i: int, dotted_module: str) -> list[int]:
        if dotted_module.startswith("."):  # relative: from the importing file's package
            level = len(dotted_module) - len(dotted_module.lstrip("."))
            package = self.files[i].names[0].split(".")[:-1]
            package = package[:len(package) - (level - 1)] if level > 1 else package
            dotted_module = ".".join([*package, dotted_module.lstrip(".")]).strip(".")
        found = self.by_module.get(dotted_module, [])
        if len(found) > 1:  # the same name in several folders: prefer the importer's
            here = str(Path(self.files[i].path).parent)
            found = sorted(found, key=lambda j: str(Path(self.files[j].path).parent) != here)
        return found

    def resolve(self, i: int, ref: Ref | None, depth: int = 0) -> FnId | None:
        """The project function a call refers to, if it is one."""
        if ref is None or depth > 8:  # re-exports that go round in circles
            return None
        kind, name = ref
        if kind == "local":
            if name in self.files[i].functions:
                return i, name
            owner, _, attr = name.rpartition(".")  # self.method(): perhaps inherited from a project class
            return self._inherited(i, owner, attr) if owner and attr else None
        if kind == "star":  # a name a `from X import *` may have brought: X's function of that name
            for module in self.files[i].stars:
                for j in self.modules(i, module):
                    if name in self.files[j].functions:
                        return j, name
            return None
        if kind == "attr":  # a method of an attribute of unknown type: only the call graph's guess (``_duck``)
            return None
        if kind == "method":  # a method of an object built from a project class, or by a project factory
            built, _, method = name.rpartition(":")
            cls = self.class_of(i, built) or self.made_by(i, built)
            if cls is not None and f"{cls[1]}.{method}" in self.files[cls[0]].functions:
                return cls[0], f"{cls[1]}.{method}"
            return None
        parts = name.split(".")
        for k in range(len(parts) - 1, 0, -1):
            head, rest = ".".join(parts[:k]), ".".join(parts[k:])
            if not head.strip("."):
                continue
            for j in self.modules(i, head):
                if rest in self.files[j].functions:
                    return j, rest
                if rest in self.files[j].aliases and j != i:  # re-exported (package __init__)
                    return self.resolve(j, ("qual", self.files[j].aliases[rest]), depth + 1)
        return None

    def made_by(self, i: int, name: str) -> tuple[int, str] | None:
        """The one project class a project function returns instances of (``trainer =
        build_trainer(args, model)`` whose ``return trainer`` holds ``Trainer(...)``), if it is one."""
        fid = self.resolve(i, ("local", name) if "." not in name else ("qual", name))
        if fid is None:
            return None
        found = {c for ref in self.files[fid[0]].functions[fid[1]].return_refs
                 if ref[0] in ("local", "qual") and (c := self.class_of(fid[0], ref[1])) is not None}
        return found.pop() if len(found) == 1 else None

    def constructor(self, i: int, ref: Ref | None) -> FnId | None:
        """The ``__init__`` a call builds an object with (``Model(path, is_eval=True)``, ``model.Model(...)``),
        when it calls a project class that defines one. Facts follow it (a constructor that puts a model
        in eval mode); call sites do not (their arguments count from the class's ``self``)."""
        if ref is None or ref[0] not in ("local", "qual", "star"):
            return None
        found = self.class_of(i, ref[1])
        init = f"{found[1]}.__init__" if found is not None else ""
        return (found[0], init) if found is not None and init in self.files[found[0]].functions else None

    def _inherited(self, i: int, cls: str, method: str, depth: int = 0) -> FnId | None:
        """``method`` as class ``cls`` of file ``i`` inherits it from a project base class."""
        if depth > 8:
            return None
        for base in self.files[i].classes.get(cls, ()):
            found = self.class_of(i, base)
            if found is None:
                continue
            j, name = found
            if f"{name}.{method}" in self.files[j].functions:
                return j, f"{name}.{method}"
            deeper = self._inherited(j, name, method, depth + 1)
            if deeper is not None:
                return deeper
        return None

    def class_of(self, i: int, name: str) -> tuple[int, str] | None:
        """The project class ``name`` refers to (as stored: qualified through file ``i``'s imports)."""
        if name in self.files[i].classes:
            return i, name
        if "." not in name:  # a bare name: perhaps from a `from X import *`
            for star in self.files[i].stars:
                for j in self.modules(i, star):
                    if name in self.files[j].classes:
                        return j, name
            return None
        head, _, rest = name.rpartition(".")
        for j in self.modules(i, head) if head.strip(".") else []:
            if rest in self.files[j].classes:
                return j, rest
        return None

    def _duck(self, ref: Ref, methods: dict[str, list[FnId]]) -> list[FnId]:
        """The project methods a call on an attribute of unknown type may run (``self.task_helper.eval_step(b)``
        where the helper comes from a registry): every project method of that name, when the name is
        particular (not ``forward``, ``step`` ...) and its classes are one family or at most four."""
        kind, name = ref
        if kind != "attr":
            return []
        found = methods.get(name.rpartition(".")[2], [])
        if len(found) <= 4:
            return found
        return found if len(found) <= 16 and len({self._root((i, key.rpartition(".")[0])) for i, key in found}) == 1 \
            else []

    def _untyped(self, i: int, ref: Ref) -> Ref:
        """``agent = make_agent(cfg)`` whose project factory returns no project class (``hydra.utils.instantiate``):
        a method called on what it made is one on an object of unknown type, for the call graph's guess."""
        if ref[0] != "method":
            return ref
        built, _, method = ref[1].rpartition(":")
        if method in GENERIC_METHODS or method.startswith("_") or self.class_of(i, built) is not None \
                or self.made_by(i, built) is not None:
            return ref
        made = self.resolve(i, ("local", built) if "." not in built else ("qual", built))
        return ("attr", f"{built}.{method}") if made is not None else ref

    def _root(self, cls: tuple[int, str], depth: int = 0) -> tuple[int, str]:
        """The topmost project class above ``cls`` (its first project base, followed up)."""
        for base in self.files[cls[0]].classes.get(cls[1], ()):
            found = self.class_of(cls[0], base)
            if found is not None and found != cls and depth < 8:
                return self._root(found, depth + 1)
        return cls

    def plain_class(self, cls: tuple[int, str], depth: int = 0) -> bool:
        """A project class that is no model: every base is ``object`` or another such project class
        (a trainer, an updater, a client); a base from outside the project may be a model's."""
        i, name = cls
        if cls in self.module_classes or depth > 8:
            return False
        for base in self.files[i].classes.get(name, ()):
            found = self.class_of(i, base) if base not in ("object", "ABC", "abc.ABC") else None
            if base not in ("object", "ABC", "abc.ABC") and (found is None or not self.plain_class(found, depth + 1)):
                return False
        return True

    def _find_module_classes(self) -> None:
        pending = [(i, c, bases) for i, f in enumerate(self.files) for c, bases in f.classes.items()]
        changed = True
        while changed:  # to a fixed point: subclasses of subclasses, across files
            changed = False
            for i, c, bases in pending:
                if (i, c) in self.module_classes:
                    continue
                if any(MODULE_BASES.match(b) or (b.endswith("Module") and b.startswith(("nn.", "torch.")))
                       or self.class_of(i, b) in self.module_classes for b in bases):
                    self.module_classes.add((i, c))
                    changed = True

    def is_model_constructor(self, i: int, callee: str) -> bool:
        """Whether calling ``callee`` (as stored for file ``i``) builds a model, or gets one from a project factory."""
        if MODEL_FACTORIES.match(callee) or (callee.endswith(".from_pretrained") and not NOT_MODELS.search(callee)):
            return True
        if (cls := self.class_of(i, callee)) is not None:
            return cls in self.module_classes and cls[1] not in self.files[cls[0]].weightless
        fid = self.resolve(i, ("local" if callee in self.files[i].functions else "qual", callee))
        return fid is not None and self.files[fid[0]].functions[fid[1]].returns_model

    # -- transitive facts --------------------------------------------------------------------

    def fact(self, what: str, fid: FnId | None, depth: int = 0) -> bool:
        """``what`` (a boolean field of ``Fn``: backward, step, zeroes, sets_eval, returns_graph ...)
        holds for the function or, through its calls, for a function it calls (followed 40 calls
        deep: a bound on the stack, far beyond real call chains)."""
        if fid is None:
            return False
        key = (what, fid)
        if key in self._memo:
            return self._memo[key]
        fn = self.files[fid[0]].functions[fid[1]]
        if getattr(fn, what) or depth > 40:
            return bool(getattr(fn, what))
        self._memo[key] = False  # a cycle answers False while it is being worked out
        refs = fn.return_refs if what == "returns_graph" else fn.refs
        result = any(self.fact(what, self.resolve(fid[0], r) or (self.constructor(fid[0], r) if what != "returns_graph"
                                                                 else None), depth + 1) for r in refs)
        self._memo[key] = result
        return result

    def sites_of(self, fid: FnId) -> list[tuple[int, Site]]:
        return self.callers.get(fid, [])

    def sites_in(self, i: int, caller: str | None) -> list[Site]:
        """The call sites inside ``caller`` (None: file ``i``'s top level), grouped once per file."""
        if i not in self._by_caller:
            grouped: dict[str | None, list[Site]] = {}
            for site in self.files[i].sites:
                grouped.setdefault(site.caller, []).append(site)
            self._by_caller[i] = grouped
        return self._by_caller[i].get(caller, [])

    def always_no_grad(self, fid: FnId, depth: int = 0) -> bool:
        """Autograd is off whenever the function runs: it is decorated so, or every call of it
        sits under no_grad or in a function that always runs so."""
        key = ("always_no_grad", fid)
        if key not in self._memo:
            self._memo[key] = False  # a cycle: not proven
            fn = self.files[fid[0]].functions[fid[1]]
            sites = self.sites_of(fid)
            self._memo[key] = fn.no_grad or (bool(sites) and depth < 20 and all(
                s.no_grad or (s.caller is not None and s.caller in self.files[i].functions
                              and self.always_no_grad((i, s.caller), depth + 1)) for i, s in sites))
        return self._memo[key]

    def view(self, i: int) -> View:
        return View(self, i)


@dataclass
class View:
    """The project as seen from file ``i``: what the rules of that file ask."""

    project: Project
    i: int
    models: set[str] = field(default_factory=set)  # dotted names holding models in this file
    mod: Module | None = None  # the file's analysis, while its rules run
    helper_backwards: list[ast.Call] | None = None  # calls of project functions that run backward
    torch_min: tuple[int, ...] | None = None  # the lowest torch this file's project allows, when it says

    def __post_init__(self) -> None:
        f = self.project.files[self.i]
        self.models = {t for t, callee in f.constructors.items() if self.project.is_model_constructor(self.i, callee)}
        for key in self.project.model_functions.get(self.i, ()):  # parameters that receive a model
            params = f.functions[key].params
            self.models.update(params[k] for k in self.project.model_params[(self.i, key)] if k < len(params))

    def fn_id(self, key: str) -> FnId | None:
        return (self.i, key) if key in self.project.files[self.i].functions else None

    def callee(self, call: ast.Call) -> FnId | None:
        """The project function ``call`` calls, if it is one."""
        if self.mod is None:
            return None
        return self.project.resolve(self.i, ref_of(call, self.mod))

    def returns_graph(self, call: ast.Call) -> bool:
        fid = self.callee(call)
        return fid is not None and self.project.fact("returns_graph", fid)

    def summary(self, call: ast.Call) -> Fn | None:
        fid = self.callee(call)
        return self.project.files[fid[0]].functions[fid[1]] if fid is not None else None

    def returns_no_graph(self, call: ast.Call) -> bool:
        """Whether ``call`` calls a project function every return of which is a number or cut from the graph,
        or one that runs under no_grad throughout (``accuracy()``'s ``with torch.no_grad():`` body)."""
        fn = self.summary(call)
        return fn is not None and (fn.returns_no_graph or (fn.no_grad and not fn.backward))

    def flowing_args(self, call: ast.Call) -> list[ast.expr] | None:
        """The arguments of ``call`` whose graph reaches what it returns, when it calls a project function
        (``Fn.arg_flow``); None when not known."""
        fn = self.summary(call)
        return given_args(call, fn.key, fn.params, fn.arg_flow) if fn is not None and fn.arg_flow is not None else None

    def returns_softmax(self, call: ast.Call) -> bool:
        """Whether ``call`` calls a project function every return of which is a softmax (``self.actor.pi(s)``),
        or a model built from a project class whose forward returns one (a C51 network's distribution)."""
        fid = self.callee(call) or self.forward_of(call)
        return fid is not None and self.project.files[fid[0]].functions[fid[1]].returns_softmax

    def graph_positions(self, call: ast.Call) -> tuple[int, ...] | None:
        """Which places of the tuple a project function returns hold graph-attached tensors (None: all)."""
        fn = self.summary(call)
        return fn.graph_positions if fn is not None else None

    def runs(self, what: str, call: ast.Call) -> bool:
        """Whether the project function ``call`` calls does ``what`` (backward, step, ...), transitively;
        a call of a model built from a project class runs that class's ``forward``, and a method of an
        object of unknown type does it when every project method it may be does."""
        fid = self.callee(call) or self.forward_of(call)
        if fid is None and self.mod is not None and (ref := ref_of(call, self.mod) or on_a_name(call, self.mod)):
            # ``self.trainer.prep_rollout()`` on an object of unknown type: when every guess does it
            guesses = self.project._duck(self.project._untyped(self.i, ref), self.project.methods)
            return bool(guesses) and all(self.project.fact(what, g) for g in guesses)
        return fid is not None and self.project.fact(what, fid)

    def forward_of(self, call: ast.Call) -> FnId | None:
        """``model(x)`` with ``model = Net(...)`` from a project class: ``Net.forward`` (or one it inherits)."""
        cls = self.built_from(dotted(call.func) or "") if isinstance(call.func, (ast.Name, ast.Attribute)) else None
        if cls is None:
            return None
        j, name = cls
        if f"{name}.forward" in self.project.files[j].functions:
            return j, f"{name}.forward"
        return self.project._inherited(j, name, "forward")

    def built_from(self, name: str) -> tuple[int, str] | None:
        """The project class whose constructor built what ``name`` holds (``model = Net(...)``), if any."""
        built = self.mod.constructed.get(name) if self.mod is not None else None
        return self.project.class_of(self.i, built) if built else None

    def plain_object(self, name: str) -> bool:
        """``name`` holds an object built from a project class that is no model (``Project.plain_class``):
        its methods are project functions, never a model's inference methods."""
        cls = self.built_from(name)
        return cls is not None and self.project.plain_class(cls)

    def is_class(self, name: str) -> bool:
        """``name`` (as written in this file) is a project class: calling it builds an object."""
        if self.mod is None:
            return False
        return self.project.class_of(self.i, self.mod.aliases.get(name, name)) is not None
