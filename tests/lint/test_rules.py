"""Each rule on fixture files: a line marked `# error: PIT101` (or warning/info) must get exactly
that finding; every unmarked line (the correct patterns) must get none."""

import re
from pathlib import Path

import pytest

from pitstop.lint import lint_source

RULES = Path(__file__).parent / "rules"
MARK = re.compile(r"#\s*(?:error|warning|info):\s*(PIT\d{3})")


def expected(source):
    return {(i, code) for i, line in enumerate(source.splitlines(), 1) for code in MARK.findall(line)}


@pytest.mark.parametrize("fixture", sorted(p.name for p in [*RULES.glob("*.py"), *RULES.glob("*.py.txt")]))
def test_rule_fixture(fixture):
    source = (RULES / fixture).read_text()
    found = {(d.line, d.code) for d in lint_source(source, fixture)}
    assert found == expected(source)


def test_a_syntax_error_is_a_finding_of_its_own():
    found = lint_source((RULES / "pit001_invalid_file.py.txt").read_text(), "broken.py")
    assert [(d.code, d.line) for d in found] == [("PIT001", 1)] and "invalid syntax" in found[0].message


def test_noqa_forms():
    src = ("import torch\n"
           "a = torch.load('x')  # noqa\n"
           "b = torch.load('x')  # noqa: PIT501\n"
           "c = torch.load('x')  # noqa: unsafe-load\n"
           "d = torch.load('x')  # noqa: PIT101\n"
           "e = torch.load('x')  # NOQA:PIT101,PIT501\n")
    assert [d.line for d in lint_source(src, "x.py")] == [5]


def test_findings_carry_positions_and_character_columns():
    src = "import torch\nnom = 'é'; a = torch.load('x')\n"
    (d,) = lint_source(src, "x.py")
    assert (d.line, d.col, d.end_line) == (2, 16, 2) and d.end_col == 16 + len("torch.load('x')")
