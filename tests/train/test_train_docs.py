"""docs/commands/train.md: its command lines are the ``--help`` examples (one source: the page shows
the generated ``--help``, and ``test_train_cli.test_help_examples_run`` runs them), and its Python
example runs as written (slow)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.snippets import blocks

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/commands/train.md"
SRC = str(ROOT / "src")


def test_the_page_shows_the_help_examples_instead_of_repeating_them():
    text = PAGE.read_text(encoding="utf-8")
    assert "<!-- pitstop-help train -->" in text and "<!-- pitstop-examples train -->" in text
    shell = [b for b in blocks(PAGE) if b.lang in ("bash", "text") and not b.generated]
    assert not any("pitstop train" in b.text for b in shell), "write examples in cli/train.py's TRAIN_EPILOG"


@pytest.mark.slow
def test_docs_python_example_runs(tmp_path):
    (code,) = [b.text for b in blocks(PAGE) if b.lang == "python" and b.arg.endswith("::test_docs_python_example_runs")]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=900,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert proc.returncode == 0, proc.stderr
    assert "Winner:" in proc.stdout and "def train_step(model, optimizer, batch)" in proc.stdout
