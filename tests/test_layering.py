"""The architecture, enforced: every import under src/pitstop (function-level ones included, the
``if TYPE_CHECKING:`` blocks left out since they never run) is read, and the tests fail on an
import cycle between modules, on a module outside ``cli/`` and ``report/`` importing
``pitstop.report``, and on an import of another package's ``_private`` name."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "pitstop"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for other in child.orelse:
                yield other
                yield from _walk(other)
            continue
        yield child
        yield from _walk(child)


def imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import statement that runs."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, str | None, int]] = []
    for node in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:  # `from pitstop.bench import api`: the submodule itself
                    found.append((sub, None, node.lineno))
                else:
                    found.append((base, alias.name, node.lineno))
    return [f for f in found if f[0] == "pitstop" or f[0].startswith("pitstop.")]


def _target(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def graph() -> dict[str, set[str]]:
    """module -> modules it imports, plus the packages whose ``__init__`` those imports run."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for imported, _, _ in imports(module):
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


def test_the_reader_sees_function_level_imports_and_skips_type_checking_blocks() -> None:
    found = {m for m, _, _ in imports("pitstop._render")}
    assert found == set()  # it finds the renderers by name on purpose
    cli = {m for m, _, _ in imports("pitstop.cli.bench")}
    assert "pitstop.bench.api" in cli  # imported inside the handler
    assert "pitstop.bench.api" not in {m for m, _, _ in imports("pitstop")}  # TYPE_CHECKING only


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_cli_and_report_import_renderers(module: str) -> None:
    if _capability(module) in ("cli", "report"):
        return
    bad = [(m, line) for m, _, line in imports(module) if m == "pitstop.report" or m.startswith("pitstop.report.")]
    assert bad == [], f"{module} imports a renderer: {bad}; go through pitstop._render or return values"


def test_no_private_name_of_another_package() -> None:
    bad = []
    for module in MODULES:
        for imported, name, line in imports(module):
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
