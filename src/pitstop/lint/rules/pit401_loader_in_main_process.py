"""PIT401 loader-in-main-process."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pitstop.lint.analysis import EVAL_NAME, Module, dotted, walk_local
from pitstop.lint.rules.base import Context, Rule, is_const, keyword
from pitstop.lint.rules.common import main_block, training_loops
from pitstop.lint.rules.entries import file_trains
from pitstop.lint.settings import config_value
from pitstop.lint.tree import walk

# evaluation data by name: val_loader, testloader, dev_set (not "device", "interval")
EVAL_DATA = re.compile(r"(?<![a-z])(val|valid|validation|test|testing|eval|evaluation|dev)(?![a-z])|"
                       r"(val|test|eval)_?(loader|set|data|ds|dataset)", re.I)
_LOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
            # PyTorch Geometric's subclasses (the same num_workers/pin_memory), old and new homes
            "torch_geometric.data.DataLoader", "torch_geometric.loader.DataLoader",
            "torch_geometric.data.dataloader.DataLoader", "torch_geometric.loader.dataloader.DataLoader")


class LoaderInMainProcess(Rule):
    """What it does:
        Finds a training `DataLoader` (shuffled, with a sampler, over a dataset named like training
        data, or iterated by a loop that runs backward; never one named like test/val/eval data or
        built inside an evaluation function)
        left at `num_workers=0`, also where the value comes from a YAML config beside the code that
        sets it to 0 (`num_workers=CONFIG.DATALOADER.NUM_WORKERS`) or from a command-line option whose
        default is 0 (`num_workers=args.num_workers`, `--num-workers` declared with `default=0` in any
        file of the project) or from a project settings class or module that binds it to 0
        (`config = Config()`, `class Config: num_workers = 0`), but not one over a `TensorDataset` of
        tensors already on the GPU (nothing to load, and CUDA tensors cannot be pinned); when the
        project uses CUDA anywhere (in any file), the message also names the missing `pin_memory=True`.

    Why is this bad:
        With no workers every batch is loaded and collated in the training process while the model
        waits; unpinned host memory makes each copy to the GPU slower and synchronous.

    Example:
        DataLoader(ds, batch_size=32, shuffle=True)

    Use instead:
        DataLoader(ds, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
    """

    code = "PIT401"
    name = "loader-in-main-process"
    message = "training DataLoader loads batches in the main process (num_workers=0){extra}; measure settings " \
              "with `pitstop data`"

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        cuda = ctx.project.project.cuda if ctx.project is not None else "cuda" in mod.source
        iterated: dict[str, bool] | None = None
        for call in mod.calls:
            if _loader_name(ctx, call.func) not in _LOADERS:
                continue
            variants = _unpacked(mod, call)  # ``DataLoader(ds, **kwargs)``: what each binding of kwargs passes
            if variants is None:
                continue
            iterated = _iterated_by_training(mod) if iterated is None else iterated
            if not self.training(ctx, call, iterated) or _on_device(mod, call):
                continue
            if variants:  # reported only when every way of building the keywords leaves the workers at 0
                if all(_zero(v.get("num_workers")) for v in variants):
                    unpinned = cuda and all(v.get("pin_memory") is None or is_const(v["pin_memory"], False)
                                            for v in variants)
                    self.report(ctx, call, extra=" and no pin_memory=True although CUDA is used" if unpinned else "")
                continue
            workers = keyword(call, "num_workers")
            pin = keyword(call, "pin_memory")
            unpinned = cuda and (pin is None or is_const(pin.value, False))
            pinning = " and no pin_memory=True although CUDA is used" if unpinned else ""
            if workers is None or (isinstance(workers.value, ast.Constant) and workers.value.value == 0):
                self.report(ctx, call, extra=pinning)
            elif not isinstance(workers.value, ast.Constant) and (found := config_value(workers.value, ctx.path)) \
                    and found.value == 0 and not isinstance(found.value, bool):
                where = f"{Path(found.path).parent.name}/{Path(found.path).name}:{found.line}"
                self.report(ctx, call, extra=f"{pinning}: `{ctx.text(workers.value)}` is 0 in {where}")
            elif (option := _option_default(ctx, workers.value)) is not None:
                self.report(ctx, call, extra=f"{pinning}: `{ctx.text(workers.value)}` is 0 by default ({option})")

    def training(self, ctx: Context, call: ast.Call, iterated: dict[str, bool]) -> bool:
        """Shuffled, sampled, over a dataset named like training data, or iterated by a training loop;
        never one named like evaluation data (test, val, eval, dev)."""
        parent = ctx.mod.parents.get(id(call))
        names = [d for t in parent.targets if (d := dotted(t))] if isinstance(parent, ast.Assign) else []
        dataset = call.args[0] if call.args else getattr(keyword(call, "dataset"), "value", None)
        data = ctx.text(dataset) if dataset is not None else ""
        if any(EVAL_DATA.search(x.rsplit(".", 1)[-1]) for x in names):
            return False  # test_loader = DataLoader(MNIST(train=False)): named for evaluation
        if not names and EVAL_DATA.search(data) and "train" not in data.lower():
            return False
        if any(iterated.get(n) for n in names):
            return True
        if main_block(ctx.mod, call) is not None and not ctx.mod.trains and (
                ctx.project is None or not file_trains(ctx.project.project, ctx.project.i)):
            return False  # a dataset module's ``if __name__ == "__main__":`` shape check: no training here
        fn = ctx.mod.enclosing_function(call)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and (EVAL_NAME.search(fn.name) or any(
                ctx.mod.is_no_grad(d) for d in fn.decorator_list)):
            return False  # built inside ``evaluate()`` / an inference_mode function: evaluation data, shuffled or not
        if _evaluation_split(ctx.mod, call, dataset):
            return False  # DataLoader(mnist_data) with mnist_data = datasets.MNIST(..., train=False)
        if names and all("." not in n for n in names) and not _read(ctx.mod, call, set(names)):
            return False  # built and never used (a test script's copy of the training loader)
        shuffle = keyword(call, "shuffle")
        sampler = keyword(call, "sampler") or keyword(call, "batch_sampler")  # an episodic batch sampler too
        made = _bound_value(ctx.mod, call, sampler.value) if sampler is not None else None  # SequentialSampler(ds)
        sequential = isinstance(made, ast.Call) and "Sequential" in (dotted(made.func) or "")
        return (shuffle is not None and not is_const(shuffle.value, False)) \
            or (sampler is not None and not sequential) \
            or "train" in data.lower() or any("train" in n.lower() for n in names)


def _changes(n: ast.AST, name: str) -> bool:
    """``n`` changes or reads the dict ``name`` other than by unpacking it (``kwargs.update(...)``,
    ``kwargs["num_workers"] = 4``, ``kwargs |= {...}``)."""
    if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)):
        return isinstance(n.target, ast.Name) and n.target.id == name
    if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
        return dotted(n.value) == name
    return isinstance(n, ast.Attribute) and dotted(n.value) == name


def _zero(value: ast.AST | None) -> bool:
    return value is None or (isinstance(value, ast.Constant) and value.value == 0 and value.value is not False)


def _unpacked(mod: Module, call: ast.Call) -> list[dict[str, ast.AST]] | None:
    """The keywords a call passes, once for each way a ``**name`` it unpacks is built in its function
    (``kwargs = {"num_workers": 0, "pin_memory": False}`` under ``if args.cuda:``, ``kwargs = {}`` else;
    an ``x if c else y`` of dict literals); ``[]`` without ``**``; None when a binding is no dict literal,
    the dict is changed in place, or more than one ``**`` is unpacked."""
    stars = [k for k in call.keywords if k.arg is None]
    if not stars:
        return []
    if len(stars) > 1 or not isinstance(stars[0].value, ast.Name):
        return None
    name, scope = stars[0].value.id, mod.enclosing_function(call)
    explicit = {k.arg: k.value for k in call.keywords if k.arg}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and name in {
            a.arg for a in walk(scope.args) if isinstance(a, ast.arg)}:
        return None  # handed in: its callers decide
    values: list[ast.AST] = []
    for n in walk_local(scope):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
            values.append(n.value)
        elif _changes(n, name):
            return None
    variants: list[dict[str, ast.AST]] = []
    while values:
        v = values.pop()
        if isinstance(v, ast.IfExp):
            values += [v.body, v.orelse]
        elif isinstance(v, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in v.keys):
            variants.append({k.value: x for k, x in zip(v.keys, v.values, strict=True)} | explicit)  # type: ignore
        else:
            return None
    return variants or None


def _option_default(ctx: Context, value: ast.AST) -> str | None:
    """``args.num_workers`` where the project's argparse options declare ``--num-workers`` with
    ``default=0`` (every declaration of that name agreeing), or ``config.num_workers`` where ``config``
    is a project class's instance or a project module whose own binding of it is 0: where, as
    ``file:line``; None otherwise."""
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)) or ctx.project is None:
        return None
    project, holder = ctx.project.project, value.value.id
    built = project.files[ctx.project.i].constructors.get(holder)  # config = Config(): the class's own value
    cls = project.class_of(ctx.project.i, built) if built else None
    module = project.files[ctx.project.i].aliases.get(holder)  # import config: the module's own value
    for j, key in ([(cls[0], f"{cls[1]}.{value.attr}")] if cls else []) + [
            (j, value.attr) for j in (project.modules(ctx.project.i, module) if module else [])]:
        if (const := project.files[j].constants.get(key)) is not None:
            zero = const[0] == 0 and not isinstance(const[0], bool)
            return f"{Path(project.files[j].path).name}:{const[1]}" if zero else None
    found = [(f.path, f.options[value.attr]) for f in ctx.project.project.files if value.attr in f.options]
    if not found or any(d != 0 or isinstance(d, bool) for _, (d, _) in found):
        return None
    path, (_, line) = found[0]
    return f"{Path(path).name}:{line}"


_DEVICE = re.compile(r"\.cuda\(|\.to\(|torch\.cuda\.|\bdevice\b")


def _on_device(mod: Module, call: ast.Call) -> bool:
    """A loader over a ``TensorDataset`` of tensors already on the GPU (``X = torch.cuda.FloatTensor(X)``,
    ``x_train = data_transform(train, n, device)``): nothing to decode, and neither workers nor
    pinning apply to CUDA tensors (AGCRN, STGCN)."""
    dataset = call.args[0] if call.args else getattr(keyword(call, "dataset"), "value", None)
    made = _bound_value(mod, call, dataset)
    if not (isinstance(made, ast.Call) and (dotted(made.func) or "").endswith("TensorDataset") and made.args):
        return False
    scope = mod.enclosing_function(call)
    body = mod.body(scope) if scope is not mod.tree else mod.tree.body
    values: dict[str, list[ast.AST]] = {}
    for n in body:
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            pairs = zip(t.elts, n.value.elts, strict=False) if isinstance(t, ast.Tuple) and isinstance(
                n.value, ast.Tuple) else [(e, n.value) for e in t.elts] if isinstance(t, ast.Tuple) else [(t, n.value)]
            for target, value in pairs:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(value)

    def placed(expr: ast.AST, depth: int = 0) -> bool:
        if _DEVICE.search(ast.unparse(expr)):
            return True
        callee = expr.func if isinstance(expr, ast.Call) else expr
        return depth < 2 and isinstance(callee, ast.Name) and any(placed(v, depth + 1)
                                                                  for v in values.get(callee.id, []))

    return all(any(placed(v) for v in values.get(a.id, [])) if isinstance(a, ast.Name) else placed(a)
               for a in made.args)


def _bound_value(mod: Module, call: ast.Call, value: ast.AST | None) -> ast.AST | None:
    """A name followed to its one assignment in the loader's scope (None when there are several)."""
    if not isinstance(value, ast.Name):
        return value
    scope = mod.enclosing_function(call)
    binds = [n.value for n in (mod.body(scope) if scope is not mod.tree else mod.tree.body)
             if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
    return binds[0] if len(binds) == 1 else None


def _evaluation_split(mod: Module, call: ast.Call, dataset: ast.AST | None) -> bool:
    """The dataset is built for evaluation: ``train=False`` (torchvision) or ``split="test"`` / ``"val"``,
    inline or through its name's one assignment in the loader's scope."""
    dataset = _bound_value(mod, call, dataset)
    if not isinstance(dataset, ast.Call):
        return False
    train, split = keyword(dataset, "train"), keyword(dataset, "split")
    return (train is not None and is_const(train.value, False)) or (
        split is not None and isinstance(split.value, ast.Constant) and isinstance(split.value.value, str)
        and bool(EVAL_DATA.search(split.value.value)))


def _read(mod: Module, call: ast.Call, names: set[str]) -> bool:
    """Whether a name bound to ``call`` is read anywhere it is visible (the whole file for a global)."""
    scope = mod.enclosing_function(call)
    nodes = walk(mod.tree) if scope is mod.tree else mod.body(scope)
    return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load) for n in nodes)


def _loader_name(ctx: Context, func: ast.AST) -> str:
    """What a call's name refers to, also where a ``from utils import *`` brought it: the name as the
    project module ``utils`` imported it (``from torch_geometric.data import DataLoader``)."""
    q = ctx.mod.qualname(func)
    view = ctx.project
    if q is not None or view is None or not isinstance(func, ast.Name):
        return q or ""
    project = view.project
    for star in project.files[view.i].stars:
        for j in project._modules(view.i, star):
            if (found := project.files[j].aliases.get(func.id)) is not None:
                return found
    return ""


def _iterated_by_training(mod: Module) -> dict[str, bool]:
    """Loader names a training loop iterates (``for x, y in loader:`` with backward inside)."""
    found: dict[str, bool] = {}
    for loop, _ in training_loops(mod):
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            it = loop.iter
            while isinstance(it, ast.Call) and it.args:  # enumerate(loader), tqdm(loader)
                it = it.args[0]
            if (d := dotted(it)) is not None:
                found[d] = True
    return found
