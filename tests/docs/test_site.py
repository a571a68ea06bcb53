"""The documentation site's generated parts (docs/gen_pages.py, the mkdocs hook): every PIT code of
the table has a page made from the table and the rule/check docstrings, every command has a page
with its real ``--help``, and the API reference covers every public name. ``make docs`` builds
the site itself (``mkdocs build --strict``, in CI)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import pitstop
from pitstop.codes import CODES
from pitstop.doctor.checks import CHECKS
from pitstop.lint.explain import docs
from pitstop.lint.rules import BY_CODE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _load_generator():
    spec = importlib.util.spec_from_file_location("pitstop_docs_gen_pages", DOCS / "gen_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


def test_every_code_of_the_table_has_a_page():
    pages = gen.code_pages()
    assert set(pages) == {f"codes/{code}.md" for code in CODES}
    for code, c in CODES.items():
        page = pages[f"codes/{code}.md"]
        assert page.startswith(f"# {code} {c.name}\n")
        assert c.summary[1:] in page and c.fix[1:] in page and c.severity in page


@pytest.mark.parametrize("code", sorted(BY_CODE))
def test_a_static_code_page_holds_its_rules_four_part_docstring(code):
    page = gen.code_page(code)
    for section, text in docs(BY_CODE[code]).items():
        assert text in page, f"{code}: the rule's {section!r} is not on its page"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_a_run_time_code_page_holds_its_doctor_checks_docstring(check):
    first = " ".join((check.__doc__ or "").split()[:8])
    for code in (check.code, *check.codes):
        assert first in " ".join(gen.code_page(code).split()), f"{check.__name__}'s docstring is not on {code}'s page"


def test_the_code_index_links_every_code_page():
    table = gen.expand("<!-- pitstop-codes -->", "codes/index.md")
    assert [m for m in re.findall(r"\]\((PIT\d{3})\.md\)", table)] == list(CODES)
    assert (DOCS / "codes" / "index.md").read_text().count("<!-- pitstop-codes -->") == 1


def test_every_command_has_a_page_in_the_nav_with_its_help():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert set(gen.commands()) == set(gen.PAGES), "a new sub-command needs its page in docs/gen_pages.py's PAGES"
    for command, page in gen.PAGES.items():
        text = (DOCS / page).read_text()
        assert f"<!-- pitstop-help {command} -->" in text, f"{page} lacks its --help marker for {command}"
        assert f": {page}" in nav, f"{page} is not in mkdocs.yml's nav"


def test_a_help_marker_becomes_the_parsers_help_text():
    out = gen.expand("before\n\n<!-- pitstop-help bench -->\n\nafter", "commands/bench.md")
    assert out.startswith("before\n\n```text\nusage: pitstop bench ") and out.endswith("```\n\nafter")
    assert "--batch-sizes N,N" in out and "<!--" not in out
    assert gen.help_text("bench") == gen.help_text("bench")  # fixed width: the site does not depend on the terminal


def test_an_examples_marker_is_the_help_examples_as_shell_lines():
    out = gen.expand("<!-- pitstop-examples train -->", "commands/train.md")
    assert out.startswith("```bash\npitstop train train.py --max-iters 200   # the script's own arguments")
    assert "\\\n    --optimizer adamw" in out  # a continuation stays one
    for command in gen.PAGES:
        if command != "explain":
            assert gen.examples(command).startswith("pitstop "), command


def test_an_unknown_command_in_a_marker_fails_the_build():
    with pytest.raises(KeyError):
        gen.expand("<!-- pitstop-help no-such-command -->", "commands/bench.md")


def test_the_commands_table_links_each_command_page():
    table = gen.expand("<!-- pitstop-commands -->", "index.md")
    for command, page in gen.PAGES.items():
        assert f"[`pitstop {command}`]({page})" in table


def test_a_schema_marker_becomes_the_schema_the_tests_validate_against():
    import json

    from pitstop.schemas import BENCH_SCHEMA

    out = gen.expand("<!-- pitstop-schema BENCH_SCHEMA -->", "commands/bench.md")
    assert out.startswith('??? note "The JSON Schema: `pitstop.schemas.BENCH_SCHEMA`"\n\n    ```json\n')
    body = "\n".join(line.removeprefix("    ") for line in out.splitlines()[3:-1])
    assert json.loads(body) == json.loads(json.dumps(BENCH_SCHEMA))
    with pytest.raises(KeyError):
        gen.expand("<!-- pitstop-schema NO_SUCH_SCHEMA -->", "commands/bench.md")


def test_every_schema_is_on_its_commands_page():
    import pitstop.schemas

    names = {n for n in dir(pitstop.schemas) if n.endswith("_SCHEMA")}
    shown = {n for page in (DOCS / "commands").glob("*.md") for n in re.findall(r"<!-- pitstop-schema (\w+) -->",
                                                                              page.read_text())}
    assert shown == names


def test_the_explain_marker_is_what_pitstop_explain_prints():
    from pitstop.lint.explain import explain

    assert explain("PIT101") in gen.expand("<!-- pitstop-explain PIT101 -->", "commands/explain.md")


def test_the_api_reference_covers_every_public_name():
    targets = re.findall(r"^::: ([\w.]+)$", (DOCS / "api.md").read_text(), re.M)
    covered = {t.rpartition(".")[2] for t in targets} | {t.removeprefix("pitstop.") for t in targets}
    missing = sorted(set(pitstop.__all__) - {"__version__"} - covered)
    assert missing == [], f"docs/api.md has no `::: ...` entry for pitstop.{missing}"


def test_contributing_is_a_page_of_the_site():
    assert "Contributing: contributing.md" in (ROOT / "mkdocs.yml").read_text()
    assert "tests/test_layering.py" in (ROOT / "CONTRIBUTING.md").read_text()


def test_the_claims_page_lists_every_claim_bench_checks():
    from pitstop.bench.claims import CLAIMS, claims_for

    page = gen.expand((DOCS / "claims.md").read_text(), "claims.md")
    for claim in [c for group in CLAIMS.values() for c in group] + list(claims_for(None)):
        assert f"| {claim.text} | {claim.source} |" in page


_DESIGN_DOCS = re.compile(r"\b(CLAIMS|CODES|PRODUCT|STYLE)\.md\b")


def test_nothing_cites_a_file_the_repository_does_not_have():
    # the design documents live outside the repository: a user reading the code, its output or the
    # site cannot open them (the claims, the codes and the JSON contract are pages of the site)
    texts = [*(ROOT / "src").rglob("*.py"), *DOCS.rglob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    cited = [f"{p.relative_to(ROOT)}:{i}" for p in texts for i, line in enumerate(p.read_text().splitlines(), 1)
             if _DESIGN_DOCS.search(line)]
    assert cited == []
