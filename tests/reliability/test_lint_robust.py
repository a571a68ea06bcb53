"""Issue 18 items 8, 9 and 12 (and lint's config types, item 13): a file that cannot be analysed is
PIT001 and the run goes on; --fix keeps encoding, BOM and line endings; GitHub annotations escape
every property; a mistyped config is one line."""

import json
import os
import sys

import pytest
from reliability_helpers import cli, one_line_error

from pitstop.lint.output import github
from pitstop.lint.rules import Diagnostic

UNSAFE_LOAD = "import torch\nx = torch.load('f')\n"


@pytest.mark.parametrize("deep", ["x = " + " + ".join(["a"] * 3000), "x = a" + ".b" * 3000])
def test_a_too_deep_file_is_pit001_and_the_others_are_linted(capsys, tmp_path, deep):
    (tmp_path / "deep.py").write_text(deep + "\n")
    (tmp_path / "bad.py").write_text(UNSAFE_LOAD)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default (torch.compile, imported by earlier tests, raises it)
    try:
        code, out, err = cli(capsys, "lint", str(tmp_path), "--output-format", "json")
    finally:
        sys.setrecursionlimit(limit)
    assert code == 1, err
    found = {(os.path.basename(f["path"]), f["code"]) for f in json.loads(out)["findings"]}
    assert found == {("deep.py", "PIT001"), ("bad.py", "PIT501")}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_named_py_does_not_block(capsys, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "bad.py").write_text(UNSAFE_LOAD)
    code, out, _ = cli(capsys, "lint", str(tmp_path))
    assert code == 1 and "pipe.py:1:1: PIT001 not a regular file" in out and "bad.py:2:5: PIT501" in out


def test_fix_keeps_a_latin1_file_latin1(capsys, tmp_path):
    path = tmp_path / "old.py"
    path.write_bytes("# -*- coding: latin-1 -*-\ns = 'café'\n".encode("latin-1") + UNSAFE_LOAD.encode())
    cli(capsys, "lint", str(path), "--fix", "--unsafe-fixes")
    data = path.read_bytes()
    assert b"weights_only=True" in data and "'café'".encode("latin-1") in data


def test_fix_keeps_the_bom_and_crlf(capsys, tmp_path):
    path = tmp_path / "win.py"
    path.write_bytes(b"\xef\xbb\xbf" + UNSAFE_LOAD.replace("\n", "\r\n").encode())
    cli(capsys, "lint", str(path), "--fix", "--unsafe-fixes")
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbfimport torch\r\n") and b"weights_only=True)\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_github_annotations_escape_a_hostile_file_name():
    name = "a,b:c%\n::warning title=INJECTED::x.py"
    line, = github([Diagnostic("PIT501", "msg\nline2", 1, 1, 1, 5, None, name)])
    assert "\n" not in line and line.count("::") == 2  # ::warning ...:: message, nothing injected
    assert "file=a%2Cb%3Ac%25%0A%3A%3Awarning title=INJECTED%3A%3Ax.py," in line
    assert line.endswith("::PIT501 msg%0Aline2")


@pytest.mark.skipif(sys.platform == "win32", reason="newlines in file names")
def test_github_output_of_a_real_run_has_one_line_per_finding(capsys, tmp_path):
    (tmp_path / "x\n::warning title=INJECTED::y.py").write_text(UNSAFE_LOAD)
    code, out, _ = cli(capsys, "lint", str(tmp_path), "--output-format", "github")
    assert code == 1 and len(out.strip().splitlines()) == 1 and out.startswith("::warning")


@pytest.mark.parametrize(("toml", "needle"), [
    ("select = 5", "select must be a list of strings"),
    ('per-file-ignores = ["x"]', "per-file-ignores must be a table of lists"),
    ('exclude = "build"', "exclude must be a list of strings"),
])
def test_a_mistyped_config_is_one_line(capsys, tmp_path, toml, needle):
    (tmp_path / "pyproject.toml").write_text(f"[tool.pitstop.lint]\n{toml}\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    code, _, err = cli(capsys, "lint", str(tmp_path / "a.py"))
    assert code == 2 and needle in one_line_error(err)
