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


@pytest.mark.parametrize("deep", ["x = " + " + ".join(["a"] * 3000), "x = a" + ".b" * 3000,
                                  "x = " + "-" * 7000 + "a"])  # past the parser's own stack: MemoryError on 3.11
def test_a_too_deep_file_is_pit001_and_the_others_are_linted(capsys, tmp_path, deep):
    (tmp_path / "deep.py").write_text(deep + "\n")
    (tmp_path / "bad.py").write_text(UNSAFE_LOAD)
    code, out, err = cli(capsys, "lint", str(tmp_path), "--output-format", "json")
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
    (tmp_path / "requirements.txt").write_text("torch>=2.0\n")  # torch < 2.6 allowed: PIT501 is a warning
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


def _below(frames: int, fn):
    """``fn()`` called ``frames`` Python frames deeper than here."""
    return fn() if frames <= 0 else _below(frames - 1, fn)


def _depth() -> int:
    frame, n = sys._getframe(), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def _load_of(expression: str) -> str:
    return f"import torch\nx = torch.load({expression})\n"


@pytest.mark.parametrize("chain", [lambda n: " + ".join(["a"] * n), lambda n: "a" + ".b" * n], ids=["add", "attr"])
def test_the_depth_verdict_does_not_depend_on_the_callers_stack_or_recursion_limit(chain):
    """Whether a file is too deep is decided by its nesting against MAX_DEPTH: the same findings at top
    level, 60 frames short of the recursion limit, and after something raised the limit (torch.compile
    raises it to 2000 for good, which once made a 3,000-term file analysable late in the suite)."""
    from pitstop.lint import lint_source
    from pitstop.lint.stack import MAX_DEPTH

    under, over = _load_of(chain(MAX_DEPTH - 20)), _load_of(chain(MAX_DEPTH + 20))

    def codes() -> list[list[str]]:
        return [[d.code for d in lint_source(src, "deep.py")] for src in (under, over)]

    top = codes()
    deep = _below(sys.getrecursionlimit() - _depth() - 60, codes)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * MAX_DEPTH))
    try:
        raised = codes()
    finally:
        sys.setrecursionlimit(limit)
    assert top == deep == raised == [["PIT501"], ["PIT001"]]


def test_lint_gives_the_same_verdict_after_the_limit_was_raised_and_from_deep_inside_other_code(capsys, tmp_path):
    """The CLI's path (lint_files, two passes): the 3,000-term file is PIT001 and the one just under
    MAX_DEPTH is linted, with the limit torch.compile leaves behind, at top level and from a deep
    stack; the caller's limit is left as it was."""
    from pitstop.lint.stack import MAX_DEPTH

    (tmp_path / "deep.py").write_text("x = " + " + ".join(["a"] * 3000) + "\n")
    (tmp_path / "under.py").write_text(_load_of(" + ".join(["a"] * (MAX_DEPTH - 20))))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 2000))  # what torch.compile leaves behind
    try:
        runs = [cli(capsys, "lint", str(tmp_path), "--output-format", "json", "--select", "ALL"),
                _below(sys.getrecursionlimit() - _depth() - 60,
                       lambda: cli(capsys, "lint", str(tmp_path), "--output-format", "json", "--select", "ALL"))]
        assert sys.getrecursionlimit() == max(limit, 2000)
    finally:
        sys.setrecursionlimit(limit)
    for code, out, err in runs:
        found = {(os.path.basename(f["path"]), f["code"]) for f in json.loads(out)["findings"]}
        assert code == 1 and found == {("deep.py", "PIT001"), ("under.py", "PIT501")}, err
