"""`pitstop lint` / `pitstop explain` end to end: formats, exit codes, configuration, fixes."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pitstop.cli import main
from pitstop.schemas import FINDING_SCHEMA

RULES = Path(__file__).parent / "rules"
SARIF = json.loads((Path(__file__).parents[1] / "fixtures" / "sarif-schema-2.1.0.json").read_text())
BAD = "import torch\n\n\ndef f(path):\n    return torch.load(path)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "requirements.txt").write_text("torch>=2.1\n")  # older than 2.6: torch.load is unsafe by default
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.py").write_text(BAD)
    (tmp_path / "src" / "clean.py").write_text("import torch\n\nx = torch.zeros(3)\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args):
    code = main(["lint", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_concise_output_summary_and_exit_codes(project, capsys):
    code, out, _ = run(capsys, "src")
    assert code == 1
    assert "src/bad.py:5:12: PIT501 [-] torch.load() without weights_only=True" in out
    assert "Found 1 finding in 2 files. 0 fixable with --fix (1 more with --unsafe-fixes)." in out
    assert "\033[" not in out  # no colour in a pipe
    assert run(capsys, "src/clean.py")[0] == 0
    assert run(capsys, "src", "--fail-on", "error")[0] == 0  # PIT501 is a warning
    assert run(capsys, "src", "--ignore", "PIT5")[0] == 0
    code, out, _ = run(capsys, "src", "--color", "always")
    assert "\033[" in out


def test_usage_errors_exit_2(project, capsys):
    assert main(["lint", "missing/"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["lint", "src", "--select", "PIT9"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--output-format", "xml"])
    assert exc.value.code == 2


def test_json_and_sarif_and_github(project, capsys):
    code, out, _ = run(capsys, "src", "--output-format", "json")
    doc = json.loads(out)
    assert doc["kind"] == "lint" and doc["files"] == 2 and code == 1
    for f in doc["findings"]:
        jsonschema.validate(f, FINDING_SCHEMA)
    assert doc["findings"][0]["fixable"] == "unsafe"
    shutil.copytree(RULES, project / "rules")  # away from this repository's own [tool.pitstop.lint]
    code, out, _ = run(capsys, "rules", "--output-format", "sarif")
    sarif = json.loads(out)
    jsonschema.validate(sarif, SARIF)  # the SARIF 2.1.0 schema
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"PIT101", "PIT102", "PIT301", "PIT501", "PIT602"}
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    code, out, _ = run(capsys, "src", "--output-format", "github")
    assert out.startswith("::warning title=PIT501 unsafe-load,file=src/bad.py,line=5,col=12,")


def test_json_file_beside_the_text_output(project, capsys):
    code, out, _ = run(capsys, "src/", "--json", "lint.json")  # the --help example
    doc = json.loads((project / "lint.json").read_text())
    assert code == 1 and doc["kind"] == "lint" and doc["files"] == 2 and len(doc["findings"]) == 1
    assert "Found 1 finding in 2 files." in out  # the text output as usual
    code, out, _ = run(capsys, "src", "--json", "-")
    assert json.loads(out)["findings"][0]["code"] == "PIT501"
    assert main(["lint", "src", "--json", str(project / "src")]) == 2  # a directory: usage error
    assert "is a directory" in capsys.readouterr().err


def test_full_output_shows_the_source_line(project, capsys):
    _, out, _ = run(capsys, "src", "--output-format", "full")
    assert "    5 |     return torch.load(path)" in out and "^^^^^^^^^^^^^^^^" in out
    assert "unsafe-load (warning)" in out


def test_pyproject_config_select_ignore_per_file_and_exclude(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.pitstop.lint]\nselect = ["PIT5", "PIT3"]\nper-file-ignores = {"src/legacy/*" = ["unsafe-load"]}\n'
        'exclude = ["src/generated"]\n')
    (project / "src" / "legacy").mkdir()
    (project / "src" / "legacy" / "old.py").write_text(BAD)
    (project / "src" / "generated").mkdir()
    (project / "src" / "generated" / "gen.py").write_text(BAD)
    (project / "src" / "other.py").write_text("import torch\n\ndef g(x):\n    return torch.log(torch.exp(x).sum(-1))\n")
    _, out, _ = run(capsys, "src")
    assert "src/bad.py" in out and "legacy" not in out and "generated" not in out
    assert "PIT602" not in out  # not selected
    (project / "pyproject.toml").write_text('[tool.pitstop.lint]\nselekt = ["PIT5"]\n')
    assert main(["lint", "src"]) == 2 and "unknown key" in capsys.readouterr().err


def test_fix_diff_and_unsafe_fixes(project, capsys):
    path = project / "src" / "bad.py"
    code, out, _ = run(capsys, "src", "--diff", "--unsafe-fixes")
    assert code == 1 and "+    return torch.load(path, weights_only=True)" in out
    assert path.read_text() == BAD  # --diff writes nothing
    code, out, _ = run(capsys, "src", "--fix")
    assert path.read_text() == BAD and code == 1  # the only fix is unsafe
    code, out, _ = run(capsys, "src", "--fix", "--unsafe-fixes")
    assert code == 0 and "weights_only=True" in path.read_text() and "Fixed 1 finding" in out


def test_undecodable_and_broken_files_are_findings_and_the_run_goes_on(project, capsys):
    (project / "src" / "latin.py").write_bytes(b"# -*- coding: utf-8 -*-\nx = '\xff\xfe'\n")
    (project / "src" / "broken.py").write_text("def f(:\n")
    _, out, _ = run(capsys, "src")
    assert "src/latin.py:1:1: PIT001" in out and "src/broken.py:1:" in out and "src/bad.py:5:12: PIT501" in out


def test_explain(capsys):
    assert main(["explain", "stale-gradients"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PIT101 stale-gradients (error; found by lint and doctor)")
    assert "Example:" in out and "Use instead:" in out and "zero_grad" in out
    assert main(["explain"]) == 0 and "PIT602" in capsys.readouterr().out
    assert main(["explain", "PIT999"]) == 2


def test_lints_the_installed_torchs_training_packages_without_an_exception():
    """nn, optim, utils and distributed of the installed torch (the whole of it: the slow test below)."""
    import torch

    from pitstop.lint import lint

    root = Path(torch.__file__).parent
    result = lint([str(root / sub) for sub in ("nn", "optim", "utils", "distributed")], select=["ALL"])
    assert result.files > 400 and result.lines > 150_000
    assert not [d for d in result.findings if d.code == "PIT001"]


@pytest.mark.slow
def test_lints_every_file_of_the_installed_torch_without_an_exception():
    import torch

    from pitstop.lint import lint

    result = lint([os.path.dirname(torch.__file__)], select=["ALL"])
    assert result.files > 1000 and result.lines > 500_000
    assert not [d for d in result.findings if d.code == "PIT001" and "too deeply" in d.message]


def test_flake8_plugin_and_pre_commit_hook(tmp_path):
    import ast

    from pitstop.lint.flake8 import Plugin

    tree = ast.parse(BAD)
    found = list(Plugin(tree, "bad.py", BAD.splitlines(True)).run())
    assert found == [(5, 11, "PIT501 torch.load() without weights_only=True: loading a checkpoint can run arbitrary "
                             "code", Plugin)]
    hooks = (Path(__file__).parents[2] / ".pre-commit-hooks.yaml").read_text()
    assert "id: pitstop-lint" in hooks and "entry: pitstop lint" in hooks
    if shutil.which("flake8"):
        (tmp_path / "bad.py").write_text(BAD)
        out = subprocess.run([sys.executable, "-m", "flake8", "--select", "PIT", str(tmp_path / "bad.py")],
                             capture_output=True, text=True)
        assert "PIT501" in out.stdout
