"""The README's train section: its CLI examples are the ``--help`` examples (run by
``test_train_cli.test_help_examples_run``) and its Python example runs as written (slow)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_train_cli import help_examples

README = Path(__file__).resolve().parents[2] / "README.md"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## `pitstop train`")
    return text[start:text.index("\n## ", start + 1)]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), re.S)


def test_readme_cli_examples_are_the_help_examples():
    import shlex

    shell = re.sub(r"\\\n\s*", " ", blocks("")[0] + blocks("")[1])
    readme = [shlex.split(re.split(r"\s{3,}#", line)[0])[1:] for line in shell.splitlines()
              if line.startswith("pitstop train")]
    assert readme == help_examples()


@pytest.mark.slow
def test_readme_python_example_runs(tmp_path):
    code = blocks("python")[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=900,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert proc.returncode == 0, proc.stderr
    assert "Winner:" in proc.stdout and "def train_step(model, optimizer, batch)" in proc.stdout
