"""The architecture, enforced: every import under src/pitstop is read (function-level ones,
``if TYPE_CHECKING:`` blocks, since a type-only import of a module that imports you back is a
cycle in the design, and ``importlib.import_module("pitstop...")`` strings, literal or an
f-string's leading text), and the tests fail on any import cycle between modules (no whitelist),
on ``pitstop.report`` importing a capability (it renders documents, it imports no result class),
on a module outside ``cli/`` importing ``pitstop.report`` at all (values render through the renderer
``pitstop/__init__`` registers), on ``engine/`` or ``hooks/`` importing a capability, on a capability
importing another's modules (peers use each other's public package only; optimize over bench is the
one stated exception), on rich outside ``report/`` and ``cli/_output.py``, and on an import of
another package's ``_private`` name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "pitstop"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _string_imports(node: ast.Call, names: set[str]) -> list[str]:
    """The modules ``importlib.import_module(...)`` names: a literal, or every module an f-string's
    leading text starts (``f"pitstop.doctor.adapters.{name}"``)."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if called != "import_module" or not node.args:
        return []
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return [m for m in names if m.startswith(str(arg.values[0].value))]
    return []


def read_imports(source: str, module: str, is_package: bool, names: set[str] | None = None,
                 ) -> list[tuple[str, str | None, int, bool]]:
    """(imported module, imported name or None, line, at module level) for every import of ``source``."""
    names = set(MODULES) if names is None else names
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    top = set()
    for stmt in tree.body:  # module level: the statements, and those in module-level if/try blocks
        top |= {id(n) for n in ast.walk(stmt) if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)} \
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else {id(stmt)}
    found: list[tuple[str, str | None, int, bool]] = []
    for node in ast.walk(tree):
        level = id(node) in top
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno, level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub, None, node.lineno, level) if sub in names
                             else (base, alias.name, node.lineno, level))
        elif isinstance(node, ast.Call):
            found += [(m, None, node.lineno, False) for m in _string_imports(node, names)]
    return [f for f in found if f[0] == "pitstop" or f[0].startswith("pitstop.")]


def imports(module: str) -> list[tuple[str, str | None, int, bool]]:
    path = MODULES[module]
    return read_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def _target(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def graph() -> dict[str, set[str]]:
    """module -> modules it imports, plus the packages whose ``__init__`` those imports run."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for imported, _, _, _ in imports(module):
            target = _target(imported)
            while target:
                if target != module and not module.startswith(target + "."):
                    edges[module].add(target)
                target = target.rpartition(".")[0] if "." in target else ""
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def _capability(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_reader_sees_every_kind_of_import() -> None:
    source = """
from typing import TYPE_CHECKING
import importlib
from pitstop.errors import UsageError
if TYPE_CHECKING:
    from pitstop.bench.result import BenchResult
def f(name):
    from pitstop.stats import Ratio
    importlib.import_module("pitstop.report")
    return importlib.import_module(f"pitstop.doctor.adapters.{name}")
"""
    found = {(m, level) for m, _, _, level in read_imports(source, "pitstop.x", False)}
    assert {("pitstop.errors", True), ("pitstop.bench.result", True), ("pitstop.stats", False),
            ("pitstop.report", False), ("pitstop.doctor.adapters.hf", False)} <= found
    cli = {m for m, _, _, _ in imports("pitstop.cli.bench")}
    assert "pitstop.bench.api" in cli  # imported inside the handler


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def _is_bottom(module: str) -> bool:
    """The shared modules under everything: files directly in ``pitstop/`` (errors, stats, _document, ...)."""
    return module.count(".") == 1 and MODULES[module].name != "__init__.py"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _capability(m) == "report"))
def test_report_renders_documents_and_imports_no_capability(module: str) -> None:
    bad = [(m, line) for m, _, line, _ in imports(module)
           if _capability(m) != "report" and not (_target(m) and _is_bottom(_target(m) or ""))]
    assert bad == [], f"{module} imports {bad}: report/ takes documents (to_dict()), not result classes"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _capability(m) in ("engine", "hooks")))
def test_the_engine_and_the_hooks_import_no_capability(module: str) -> None:
    # engine/ is what the capabilities share (timing, load, model sources, worker start-up) and hooks/
    # the run-time session the doctor and the profiler consume: they may use the shared bottom modules,
    # models/ and each other, never a capability above them
    bad = [(m, line) for m, _, line, _ in imports(module) if _capability(m) not in ("engine", "hooks", "models")
           and not (_target(m) and _is_bottom(_target(m) or ""))]
    assert bad == [], f"{module} imports {bad}: the engine and the hooks are under the capabilities"


# the layers: cli on top; the capabilities, peers; under them engine (measuring, launching), hooks (the
# run-time session and its adapters), report (rendering) and models; the shared bottom modules
LAYERS = {"cli", "engine", "hooks", "report", "models"}
CAPABILITIES = {"bench", "optimize", "generate", "train", "profile", "doctor", "data", "memory", "numerics", "lint",
                "compare"}
# the one stated exception: optimize is bench's search (it measures bench's variants with bench's group,
# fidelity check and settings); generate, train and the rest stand on the engine alone
PEER_EXCEPTIONS = {("optimize", "bench")}


def test_every_package_is_a_layer_or_a_capability() -> None:
    packages = {_capability(m) for m, p in MODULES.items() if m.count(".") == 1 and p.name == "__init__.py"}
    assert packages - LAYERS - CAPABILITIES == set(), "a new package: add it to LAYERS or CAPABILITIES"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _capability(m) in CAPABILITIES))
def test_capabilities_are_peers(module: str) -> None:
    # a capability may use another's public API (its package: ``from pitstop.memory import checkpoint``),
    # as a user would, never its modules; what two capabilities share belongs in engine/ or hooks/
    mine = _capability(module)
    bad = [(m, line) for m, _, line, _ in imports(module)
           if (other := _capability(m)) in CAPABILITIES and other != mine and (mine, other) not in PEER_EXCEPTIONS
           and _target(m) != f"pitstop.{other}"]
    assert bad == [], f"{module} imports another capability's modules {bad}: move what they share to engine/ or hooks/"


def test_the_peer_rule_finds_a_capability_reaching_into_another() -> None:
    found = read_imports("from pitstop.doctor.script import run_script\nfrom pitstop.memory import checkpoint\n",
                         "pitstop.profile.script", False)
    reached = [m for m, _, _, _ in found if _target(m) != f"pitstop.{_capability(m)}"]
    assert reached == ["pitstop.doctor.script"]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_cli_imports_renderers(module: str) -> None:
    if _capability(module) in ("cli", "report"):
        return
    bad = [(m, line) for m, _, line, _ in imports(module) if m == "pitstop.report" or m.startswith("pitstop.report.")]
    assert bad == [], f"{module} imports a renderer: {bad}; a value's document renders through " \
                      "pitstop._document.Rendered (the renderer registers itself)"


def test_no_rich_outside_report_and_the_cli_output() -> None:
    bad = []
    for module, path in MODULES.items():
        if _capability(module) == "report" or module == "pitstop.cli._output":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{module}:{node.lineno}" for n in names if n == "rich" or n.startswith("rich.")]
    assert bad == []


def test_no_private_name_of_another_package() -> None:
    bad = []
    for module in MODULES:
        for imported, name, line, _ in imports(module):
            if name and name.startswith("_") and not name.startswith("__") \
                    and _capability(imported) != _capability(module):
                bad.append(f"{module}:{line} imports {imported}.{name}")
    assert bad == []


def test_no_file_over_400_lines() -> None:
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


def test_no_function_over_8_parameters_outside_settings_constructors() -> None:
    bad = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
                if len(names) > 8:
                    bad.append(f"{module}.{node.name} ({len(names)})")
    assert bad == []


_ERRORS = {"UsageError", "SettingError", "ReferenceFailed", "ValueError", "TypeError", "RuntimeError"}


def _flag_in_raise(node: ast.Raise) -> str | None:
    """The ``--flag`` text of a ``raise SomeError("... --flag ...")`` (f-strings included), or None."""
    call = node.exc
    if not isinstance(call, ast.Call):
        return None
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name not in _ERRORS:
        return None
    for arg in call.args:
        for sub in ast.walk(arg):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and " --" in f" {sub.value}":
                flag = f" {sub.value}".split(" --", 1)[1].split()[0] if f" {sub.value}".split(" --", 1)[1] else ""
                if flag[:1].isalpha():
                    return f"--{flag}"
    return None


def test_no_cli_flag_in_a_library_error() -> None:
    """Only cli/ knows which flag set a field: a library error names the field (SettingError), the
    CLI maps it to the flag (issue 30)."""
    bad = []
    for module, path in MODULES.items():
        if module.startswith("pitstop.cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and (flag := _flag_in_raise(node)):
                bad.append(f"{path.relative_to(SRC)}:{node.lineno}: {flag}")
    assert not bad, "library errors naming CLI flags:\n" + "\n".join(bad)


def test_the_flag_guard_sees_a_flag() -> None:
    raise_node = ast.parse('raise UsageError(f"--time-budget-s must be positive, got {x}")').body[0]
    assert isinstance(raise_node, ast.Raise) and _flag_in_raise(raise_node) == "--time-budget-s"


_PATCH = re.compile(r"^\s*((torch|nn|DataLoader|_BaseDataLoaderIter|_dataloader|DistributedDataParallel|cls)\.[\w.]+"
                    r"(\s*,\s*[\w.]+)*|[\w.]+\.__class__)\s*=\s*(?P<value>.*)$")


def test_every_class_swap_and_global_patch_says_why_it_is_safe():
    # a patched torch method or a swapped class changes code pitstop does not own: each says, within
    # the lines just above it, why it is safe and where it is undone; putting the original back needs no note
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = _PATCH.match(line)
            if m is None or "orig" in m.group("value"):
                continue
            if not any("safe:" in near for near in lines[max(0, i - 8):i + 1]):
                missing.append(f"{path.relative_to(SRC.parent)}:{i + 1}: {line.strip()}")
    assert missing == []
