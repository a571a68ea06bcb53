"""What one file contributes to the project (``FileIndex``), built from its one parse so that the
tree can be dropped: module names, imports, classes, function summaries and call sites."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from pitstop.lint.analysis import Module, dotted
from pitstop.lint.project_facts import Fn, Site, fn_key, index_functions, ref_of
from pitstop.lint.shapes import accumulated, weightless


@dataclass
class FileIndex:
    """What one file contributes to the project (no syntax tree kept)."""

    path: str
    names: list[str]  # the dotted module names it answers to (a/b/c.py: a.b.c, b.c, c)
    aliases: dict[str, str]
    functions: dict[str, Fn]
    classes: dict[str, list[str]]  # class -> its bases (qualified where imported)
    constructors: dict[str, str]  # dotted target -> what was called to build it (qualified where imported)
    sites: list[Site]
    cuda: bool
    trains: bool  # runs backward, builds an optimizer or clears gradients
    stars: list[str] = field(default_factory=list)  # modules imported with `from X import *`
    mode_layers: bool = False  # mentions dropout or batch-norm: train/eval mode changes what it computes
    weightless: set[str] = field(default_factory=set)  # classes that hold no parameters (``shapes.weightless``)
    options: dict[str, tuple[object, int]] = field(default_factory=dict)  # argparse dest -> (constant default, line)
    attr_calls: set[str] = field(default_factory=set)  # method names it calls on anything (``x.sample_pixels(4)``)
    constants: dict[str, tuple[object, int]] = field(default_factory=dict)  # "NAME" / "Class.NAME" -> (value, line)


_ABOVE = 3  # folders above the linted root that module names may start at


def module_names(path: str, root: Path | None) -> list[str]:
    p = Path(path)
    try:
        rel = p.resolve().relative_to(root) if root else Path(p.name)
    except ValueError:
        rel = Path(p.name)
    parts = [*rel.parent.parts, rel.stem] if rel.stem != "__init__" else list(rel.parent.parts)
    parts = [x for x in parts if x not in ("", ".")]
    # a few folders above the root too (``pitstop lint din/*.py``, whose train.py imports ``din.model``)
    full = p.resolve().parts
    above: list[str] = []
    for x in reversed(full[:len(full) - len(rel.parts)][-_ABOVE:]):
        if not x.isidentifier():
            break
        above.insert(0, x)
    names = [".".join(parts[i:]) for i in range(len(parts))] or [p.stem]
    return names + [".".join([*above[i:], *parts]) for i in range(len(above) - 1, -1, -1)]


# layers whose output depends on train/eval mode (torchvision/timm models all hold some)
MODE_LAYERS = re.compile(r"Dropout|BatchNorm|dropout|batch_norm|torchvision\.models|timm|from_pretrained")


def index_file(mod: Module, path: str, root: Path | None) -> FileIndex:
    """The index of one parsed file (``mod``: a ``pitstop.lint.analysis.Module``)."""
    classes = {name: [mod.qualname(b) or dotted(b) or "" for b in node.bases] for name, node in mod.classes.items()}
    # what each name was built by (``Net(...).to(device)`` is a Net), optimizers left out
    constructors = {d: callee for d, callee in mod.constructed.items() if not callee.startswith("torch.optim")}
    functions, sites = index_functions(mod)
    _factories(mod, functions)
    for fn in mod.defs:  # what each method adds to a total on its object (an AverageMeter's update)
        if (info := functions.get(fn_key(mod, fn))) is not None and isinstance(mod.parents.get(id(fn)), ast.ClassDef):
            info.accumulates = accumulated(fn, mod.body(fn))  # type: ignore[arg-type]
    trains = mod.trains or bool(mod.optimizers) or any(
        isinstance(c.func, ast.Attribute) and c.func.attr == "zero_grad" for c in mod.calls)
    return FileIndex(path, module_names(path, root), dict(mod.aliases), functions, classes, constructors, sites,
                     "cuda" in mod.source, trains, list(mod.star_modules), bool(MODE_LAYERS.search(mod.source)),
                     {name for name, node in mod.classes.items() if weightless(node)}, _options(mod),
                     {c.func.attr for c in mod.calls if isinstance(c.func, ast.Attribute)}, _constants(mod))


def _constants(mod: Module) -> dict[str, tuple[object, int]]:
    """Numbers and strings bound once at the top level or in a class body (a config module's
    ``num_workers = 0``, ``class Config: num_workers = 0``), by ``NAME`` / ``Class.NAME``."""
    found: dict[str, list[tuple[object, int]]] = {}
    bodies = [("", mod.tree.body), *((f"{c.name}.", c.body) for c in mod.tree.body if isinstance(c, ast.ClassDef))]
    for prefix, body in bodies:
        for n in body:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                value = n.value.value if isinstance(n.value, ast.Constant) else _COMPUTED
                found.setdefault(prefix + n.targets[0].id, []).append((value, n.lineno))
    return {k: v[0] for k, v in found.items() if len(v) == 1 and v[0][0] is not _COMPUTED}


_COMPUTED = object()  # a binding whose value is not a constant


def _options(mod: Module) -> dict[str, tuple[object, int]]:
    """The command-line options the file declares with a constant default:
    ``parser.add_argument("--num-workers", type=int, default=0)`` -> ``{"num_workers": (0, line)}``."""
    found: dict[str, tuple[object, int]] = {}
    for c in mod.calls:
        if not (isinstance(c.func, ast.Attribute) and c.func.attr == "add_argument"):
            continue
        default = next((k.value for k in c.keywords if k.arg == "default"), None)
        if not isinstance(default, ast.Constant):
            continue
        dest = next((k.value.value for k in c.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
        flags = [a.value for a in c.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        long = next((f for f in flags if f.startswith("--")), None) or next(iter(flags), None)
        name = dest if isinstance(dest, str) else long.lstrip("-").replace("-", "_") if long else None
        if name:
            found[name] = (default.value, c.lineno)
    return found


def _factories(mod: Module, functions: dict[str, Fn]) -> None:
    """What a function returns an instance of, built here (``trainer = Trainer(...); return trainer``,
    ``return Trainer(...)``): added to its ``return_refs`` for ``Project.made_by``."""
    for fn in mod.defs:
        info = functions.get(fn_key(mod, fn))
        if info is None:
            continue
        body = mod.body(fn)
        values = [n.value for n in body if isinstance(n, ast.Return) and n.value is not None]
        names = {v.id for v in values if isinstance(v, ast.Name)}
        values += [n.value for n in body if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and n.targets[0].id in names]
        for v in values:
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id[:1].isupper():
                ref = ("local", v.func.id) if v.func.id in mod.classes else ref_of(v, mod)
                if ref is not None:
                    info.return_refs.append(ref)
