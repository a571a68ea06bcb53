"""Shapes of code the project index records, decided from the syntax alone: module classes that hold
no weights, functions that open no_grad around their own work, and method names too common to
say which class an object of unknown type is."""

from __future__ import annotations

import ast
import re

from pitstop.lint.analysis import Module, dotted

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
    for n in ast.walk(cls):
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
            for target in n.targets for t in ast.walk(target) if isinstance(t, ast.Name)}

    def root(e: ast.AST) -> str | None:
        while isinstance(e, (ast.Attribute, ast.Subscript, ast.Call)):
            e = e.func if isinstance(e, ast.Call) else e.value
        return e.id if isinstance(e, ast.Name) else None

    return all(mod.under_no_grad(c) is not None or mod.is_no_grad(c)
               or (c.func.attr if isinstance(c.func, ast.Attribute) else dotted(c.func)) in _CHECKS
               or (isinstance(c.func, ast.Attribute) and root(c.func.value) in made) for c in calls)
