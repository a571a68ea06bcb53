"""Cross-function and cross-file patterns on small multi-file projects (`rules/projects/NAME/`),
each linted as one project: every `# error: PITxxx[, PITyyy]` marker must be found and nothing
else; the `*_clean` twins must give no finding at all."""

import re
import shutil
from pathlib import Path

import pytest

from pitstop.lint import lint, lint_source

PROJECTS = Path(__file__).parent / "rules" / "projects"
MARK = re.compile(r"#\s*(?:error|warning|info):\s*(PIT\d{3}(?:\s*,\s*PIT\d{3})*)")


def markers(root: Path) -> set[tuple[str, int, str]]:
    found = set()
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for group in MARK.findall(line):
                found |= {(path.relative_to(root).as_posix(), number, c.strip()) for c in group.split(",")}
    return found


@pytest.mark.parametrize("name", sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()))
def test_project(name, tmp_path):
    # away from this repository's own pyproject.toml and its per-file ignores, and two folders below the
    # test's own: PIT401 reads YAML configs up to two folders up, where other tests' files may lie
    root = tmp_path / "a" / "b" / name
    shutil.copytree(PROJECTS / name, root)
    result = lint([str(root)], select=["ALL"])
    found = {(Path(d.path).relative_to(root).as_posix(), d.line, d.code) for d in result.findings}
    assert found == markers(root)
    if name.endswith("_clean"):
        assert found == set() and (PROJECTS / name.removesuffix("_clean")).is_dir()


def test_every_pattern_has_a_clean_twin_or_is_a_requirement_pair():
    names = {p.name for p in PROJECTS.iterdir() if p.is_dir()}
    for name in names - {"torch_new", "torch_old"}:
        assert name.endswith("_clean") or f"{name}_clean" in names


def test_torch_requirement_sets_pit501(tmp_path):
    for name in ("torch_new", "torch_old"):
        shutil.copytree(PROJECTS / name, tmp_path / name)
    old = lint([str(tmp_path / "torch_old")], select=["PIT501"]).findings
    assert [(d.line, d.level) for d in old] == [(5, "warning")]  # torch 1.13 allowed: unsafe by default
    new = lint([str(tmp_path / "torch_new")], select=["PIT501"]).findings
    assert [d.line for d in new] == [9] and "weights_only=False" in new[0].message
    unknown = lint_source("import torch\n\nstate = torch.load('ckpt.pt')\n", "x.py")
    assert [(d.code, d.level) for d in unknown] == [("PIT501", "info")]  # no requirement found: the softer level


def test_one_parse_per_file(tmp_path, monkeypatch):
    import ast

    import pitstop.lint.engine as engine

    shutil.copytree(PROJECTS / "eval_elsewhere", tmp_path / "p")
    parsed = []
    real = ast.parse
    monkeypatch.setattr(engine.ast, "parse", lambda src, *a, **k: parsed.append(1) or real(src, *a, **k))
    lint([str(tmp_path / "p")], select=["ALL"])
    assert len(parsed) == 2


def test_a_linted_file_knows_the_modules_it_imports(tmp_path):
    """`pitstop lint train.py` reads the project modules train.py imports for their facts (a model
    class next to it is a model, under any name) and reports on train.py alone."""
    (tmp_path / "nets.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Features(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        return self.fc(x)\n\n\nweights = torch.load('w.pt')\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport nets\n\nVGG = nets.Features().to('cpu')\n"
        "opt = torch.optim.SGD(VGG.parameters(), lr=0.1)\ntotal = 0\nfor x in [torch.randn(2, 4)]:\n"
        "    opt.zero_grad()\n    loss = VGG(x).sum()\n    total += loss\n"
        "    loss.backward()\n    opt.step()\nprint(float(total))\n")
    result = lint([str(tmp_path / "train.py")], select=["ALL"])
    assert [(Path(d.path).name, d.line, d.code) for d in result.findings] == [("train.py", 10, "PIT102")]
    assert result.files == 1


def test_imported_module_files(tmp_path):
    from pitstop.lint.imports import module_file

    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/models.py", "pkg/sub/__init__.py", "pkg/sub/run.py", "utils.py"):
        (tmp_path / name).write_text("")
    run = tmp_path / "pkg" / "sub" / "run.py"
    assert module_file(run, "..models", tmp_path) == tmp_path / "pkg" / "models.py"  # relative, one package up
    assert module_file(run, "pkg.models.Net", tmp_path) == tmp_path / "pkg" / "models.py"  # a name in a module
    assert module_file(run, "utils", tmp_path) == tmp_path / "utils.py"  # from a folder above, up to the root
    assert module_file(run, "numpy", tmp_path) is None  # not the project's
    assert module_file(run, "utils", tmp_path / "pkg") is None  # above the folder the linted files share


def test_files_of_a_subfolder_resolve_imports_through_it(tmp_path):
    # `pitstop lint din/train.py din/model.py` from the repository: train.py imports `din.model`, a name
    # that starts one folder above the files given; the model's softmax output is found through it
    (tmp_path / "din").mkdir()
    (tmp_path / "din" / "model.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(8, 2)\n\n    def forward(self, x):\n"
        "        return torch.softmax(self.fc(x), dim=-1)\n")
    (tmp_path / "din" / "train.py").write_text(
        "import torch\n\nfrom din.model import Net\n\n\ndef nll(model, x, y):\n    prob = model(x)\n"
        "    return -(torch.log(prob) * y).mean()\n\n\ndef main():\n    model = Net()\n"
        "    print(nll(model, torch.randn(4, 8), torch.ones(4, 2)))\n")
    files = [str(tmp_path / "din" / "train.py"), str(tmp_path / "din" / "model.py")]
    found = [(Path(d.path).name, d.line, d.code) for d in lint(files, select=["PIT602"]).findings]
    assert found == [("train.py", 8, "PIT602")]
