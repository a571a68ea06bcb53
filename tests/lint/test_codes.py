"""The code table drives everything: codes are unique; every static code has one rule class (code,
name, message, fix safety, four-part docstring) and a fixture named after it; `pitstop lint --help`
and `pitstop explain` are generated from the table."""

import ast
import re
import string
from pathlib import Path

import pytest

import pitstop.codes
from pitstop.cli import main
from pitstop.codes import CODES
from pitstop.lint import lint_source
from pitstop.lint.explain import SECTIONS, docs, explain
from pitstop.lint.rules import BY_CODE, RULES

FIXTURES = Path(__file__).parent / "rules"
FIX_PAIRS = Path(__file__).parent / "fixes"
STATIC = sorted(c.code for c in CODES.values() if "S" in c.kinds)
MARK = re.compile(r"#\s*(?:error|warning|info):\s*(PIT\d{3})")


def test_codes_and_names_are_unique_in_the_table_as_written():
    """``CODES`` is a dict: a duplicate would silently replace an entry, so count the entries in the source."""
    tree = ast.parse(Path(pitstop.codes.__file__).read_text())
    entries = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Code"]
    codes = [n.args[0].value for n in entries]
    names = [n.args[1].value for n in entries]
    assert len(codes) == len(set(codes)) == len(CODES)
    assert len(names) == len(set(names))
    for code, name in zip(codes, names, strict=True):
        assert re.fullmatch(r"PIT\d{3}", code) and re.fullmatch(r"[a-z]+(-[a-z]+)*", name), (code, name)


def test_every_static_code_has_exactly_one_rule_and_every_rule_a_static_code():
    assert sorted(BY_CODE) == STATIC
    assert len(RULES) == len(BY_CODE)
    for rule in RULES:
        assert rule.name == CODES[rule.code].name
        assert rule.fix in (None, "safe", "unsafe")


@pytest.mark.parametrize("code", STATIC)
def test_every_static_code_has_a_fixture_named_after_it_with_markers_and_clean_lines(code):
    stem = f"{code.lower()}_{CODES[code].name.replace('-', '_')}"
    fixtures = sorted(FIXTURES.glob(f"{stem}*.py*"))
    assert fixtures, f"no fixture tests/lint/rules/{stem}.py"
    lines = [ln for f in fixtures for ln in f.read_text().splitlines()]
    assert any(code in MARK.findall(ln) for ln in lines)
    assert code == "PIT001" or any(ln.strip() and not ln.lstrip().startswith("#") and not MARK.search(ln)
                                   for ln in lines)  # clean lines that must stay clean


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_docstring_has_the_four_parts_and_matches_the_table(rule):
    d = docs(rule)
    assert list(d) == list(SECTIONS) and all(d.values())
    c = CODES[rule.code]
    if c.example:
        assert d["Example"] == c.example and d["Use instead"] == c.instead
    assert rule.message and all(f[1] is None or f[1].isidentifier() for f in string.Formatter().parse(rule.message))


def test_fixes_carry_the_safety_their_rule_declares():
    sources = [*FIXTURES.glob("*.py"), *FIX_PAIRS.glob("*.in.py")]
    seen = set()
    for path in sources:
        for d in lint_source(path.read_text(), path.name):
            declared = BY_CODE[d.code].fix
            if d.fix is not None:
                assert declared is not None and d.fix.safe == (declared == "safe"), (path.name, d.code)
                seen.add(d.code)
    assert seen == {r.code for r in RULES if r.fix is not None}  # every declared fix is exercised


def test_help_and_explain_are_generated_from_the_table(capsys):
    with pytest.raises(SystemExit):
        main(["lint", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for code in STATIC:
        assert f"{code} {CODES[code].name}" in help_text
    assert main(["explain"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [ln.split()[:2] for ln in listing] == [[c.code, c.name] for c in CODES.values()]


@pytest.mark.parametrize("code", sorted(CODES))
def test_explain_keeps_the_table_content(code):
    c = CODES[code]
    text = explain(code)
    assert text.startswith(f"{c.code} {c.name} ({c.severity}; found by ")
    assert c.summary in text and c.fix in text
    for block in (c.example, c.instead):
        assert all(("    " + ln) in text.splitlines() for ln in block.splitlines())
    if code in BY_CODE:
        assert docs(BY_CODE[code])["What it does"] in text
