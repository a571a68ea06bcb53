"""Fix pairs: `NAME.in.py` fixed (safe fixes; `unsafe_*` with unsafe ones too) must equal
`NAME.out.py`, parse, and be a fixed point (a second --fix changes nothing)."""

import ast
from pathlib import Path

import pytest

from pitstop.lint import LintConfig, lint_source
from pitstop.lint.fix import fix_source

FIXES = Path(__file__).parent / "fixes"


@pytest.mark.parametrize("name", sorted(p.name[:-len(".in.py")] for p in FIXES.glob("*.in.py")))
def test_fix_pair(name):
    source = (FIXES / f"{name}.in.py").read_text()
    unsafe = name.startswith("unsafe_")
    fixed, applied = fix_source(source, name, LintConfig(), unsafe=unsafe)
    assert fixed == (FIXES / f"{name}.out.py").read_text()
    assert applied
    ast.parse(fixed)
    again, more = fix_source(fixed, name, LintConfig(), unsafe=unsafe)
    assert again == fixed and not more  # idempotent
    left = [d for d in lint_source(fixed, name) if d.fix and (d.fix.safe or unsafe)]
    assert not left


def test_unsafe_fixes_wait_for_the_flag():
    source = (FIXES / "unsafe_pit202_501.in.py").read_text()
    fixed, applied = fix_source(source, "x.py", LintConfig(), unsafe=False)
    assert fixed == source and not applied
    codes = {(d.code, d.fix.safe) for d in lint_source(source, "x.py") if d.fix}
    assert codes == {("PIT202", False), ("PIT501", False)}
