"""The generated parts of the documentation site, made from the code at build time so that the
two never drift. mkdocs runs this file as a hook (``hooks:`` in mkdocs.yml); nothing is written
into ``docs/`` and nothing generated is committed:

- ``<!-- pitstop-help COMMAND -->`` in a page becomes ``pitstop COMMAND --help`` as the real
  parser (``pitstop.cli.build_parser()``) formats it, so the options on the site are the options
  of the command line;
- ``<!-- pitstop-examples COMMAND -->`` becomes the ``examples:`` of ``pitstop COMMAND --help`` as a
  shell block, so a page's examples are the parser's (tests/docs/test_snippets.py runs them);
- ``<!-- pitstop-commands -->`` becomes the table of commands, from the parser's one-line helps;
- ``<!-- pitstop-explain CODE -->`` becomes what ``pitstop explain CODE`` prints;
- ``<!-- pitstop-schema NAME -->`` becomes ``pitstop.schemas.NAME``, the JSON Schema the tests validate
  the command's ``--json`` output against, in a folded block;
- ``<!-- pitstop-claims -->`` becomes the table of published claims ``pitstop bench`` checks
  (``pitstop.bench.claims``);
- ``<!-- pitstop-codes -->`` becomes the table of PIT codes, and ``codes/PITnnn.md`` is one page per
  entry of ``pitstop.codes.CODES``: the code table, the lint rule's four-part docstring (as
  ``pitstop explain`` reads it) and the docstrings of the doctor checks that report the code;
- ``contributing.md`` is the repository's CONTRIBUTING.md, so it has one source;
- ``<!-- snippet: ... -->`` lines (which test runs the next block: tests/docs/snippets.py) are dropped.

``expand()``, ``code_pages()`` and ``help_text()`` are plain functions: the tests call them
without mkdocs."""

from __future__ import annotations

import argparse
import inspect
import os
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HELP_COLUMNS = "100"  # --help wraps at the terminal's width; the site's is fixed

# Which page documents each sub-command: several share one page.
PAGES = {
    "bench": "commands/bench.md", "optimize": "commands/optimize.md", "train": "commands/train.md",
    "profile": "commands/profile.md", "doctor": "commands/doctor.md", "lint": "commands/lint.md",
    "memory": "commands/memory.md", "gradcheck": "commands/memory.md", "data": "commands/data.md",
    "compare": "commands/compare.md", "report": "commands/compare.md", "explain": "commands/explain.md",
}
_SNIPPET = re.compile(r"^<!-- snippet: .* -->\n", re.M)
_MARK = re.compile(r"^<!-- pitstop-(help|examples|explain|commands|codes|claims|schema)(?: ([A-Za-z0-9 _-]+?))? -->$",
                   re.M)
_KINDS = {"S": "`pitstop lint`", "R": "`pitstop doctor`", "SR": "`pitstop lint` and `pitstop doctor`"}


def _subparsers() -> argparse._SubParsersAction:
    from pitstop.cli import build_parser

    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def commands() -> dict[str, str]:
    """Every sub-command of ``pitstop`` with its one-line help, in the parser's order."""
    return {a.dest: a.help or "" for a in _subparsers()._choices_actions}


def help_text(command: str) -> str:
    """``pitstop COMMAND --help`` (``pitstop --help`` for ``""``), wrapped at a fixed width."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        from pitstop.cli import build_parser

        return (_subparsers().choices[command] if command else build_parser()).format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def examples(command: str) -> str:
    """The ``examples:`` (or ``example:``) lines of ``pitstop COMMAND --help``'s epilog as shell lines:
    a comment (after two spaces or more) gets its ``#``."""
    epilog = _subparsers().choices[command].epilog or ""
    found = re.search(r"^examples?:\n((?:[ ]{2}.*(?:\n|$))+)", epilog, re.M)
    if found is None:
        raise KeyError(f"pitstop {command} --help has no examples")
    lines = []
    for line in textwrap.dedent(found[1]).rstrip().splitlines():
        parts = re.split(r"\s{2,}(?=\S)", line, maxsplit=1)
        if line.startswith(" ") or len(parts) == 1:  # a continuation, or no comment
            lines.append(line)
        else:
            lines.append(f"{parts[0]}   {'' if parts[1].startswith('#') else '# '}{parts[1]}")
    return "\n".join(lines)


def _fence(text: str, lang: str = "text") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


def _link(page: str, target: str) -> str:
    """``target`` (a path under docs/) relative to ``page``'s folder, as mkdocs resolves links."""
    return os.path.relpath(target, os.path.dirname(page) or ".").replace(os.sep, "/")


def commands_table(page: str) -> str:
    rows = [f"| [`pitstop {name}`]({_link(page, PAGES[name])}) | {text} |" for name, text in commands().items()]
    return "\n".join(["| command | what it does |", "|---|---|", *rows])


def schema_block(name: str) -> str:
    """``pitstop.schemas.NAME`` as JSON, folded (``pymdownx.details``); an unknown name fails the build."""
    import json

    from pitstop import schemas

    if not name.endswith("_SCHEMA") or not hasattr(schemas, name):
        raise KeyError(f"pitstop.schemas has no {name}")
    body = _fence(json.dumps(getattr(schemas, name), indent=2), "json")
    return f'??? note "The JSON Schema: `pitstop.schemas.{name}`"\n\n' + "\n".join(
        f"    {line}" if line else "" for line in body.splitlines())


def _explain_help(key: str) -> str:
    from pitstop.lint.explain import explain

    return explain(key)


# ---- the PIT code pages ----------------------------------------------------------------------


def _prose(text: str) -> str:
    """A docstring's paragraphs, each joined into one line (indentation would read as code)."""
    return "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", inspect.cleandoc(text)) if p.strip())


def _checks_for(code: str) -> list[Any]:
    from pitstop.doctor.checks import CHECKS

    return [c for c in CHECKS if c.code == code or code in c.codes]


def code_page(key: str) -> str:
    """One code's page: what, fix, why, what lint finds, what the doctor watches, example, instead."""
    from pitstop.codes import CODES
    from pitstop.lint.explain import docs
    from pitstop.lint.rules import BY_CODE

    c = CODES[key]
    parts = [f"# {c.code} {c.name}", "", f"**{c.severity}**, found by {_KINDS[c.kinds]}. "
             f"`pitstop explain {c.code}` prints the same in a terminal.", "",
             f"{c.summary[0].upper()}{c.summary[1:]}.", "", "## Fix", "", f"{c.fix[0].upper()}{c.fix[1:]}."]
    example, instead = c.example, c.instead
    rule = BY_CODE.get(c.code)
    if rule is not None:
        d = docs(rule)
        parts += ["", "## Why it is bad", "", d["Why is this bad"], "", "## What `pitstop lint` finds", "",
                  d["What it does"]]
        example, instead = d["Example"], d["Use instead"]
    for check in _checks_for(c.code):
        others = [o for o in check.codes if o != c.code]
        also = f" (the same check also reports {', '.join(f'[{o}]({o}.md)' for o in others)})" if others else ""
        parts += ["", f"## What `pitstop doctor` watches{also}", "", _prose(check.__doc__ or "")]
    if example:
        parts += ["", "## Example", "", _fence(example, "python")]
    if instead:
        parts += ["", "## Use instead", "", _fence(instead, "python")]
    if "S" in c.kinds:
        parts += ["", "## Silencing it", "",
                  f"`# noqa: {c.code}` (or `# noqa: {c.name}`) on the line, `--ignore {c.code}` on the command "
                  "line, or `ignore`/`per-file-ignores` under `[tool.pitstop.lint]` in pyproject.toml."]
    return "\n".join(parts) + "\n"


def codes_table(page: str) -> str:
    from pitstop.codes import CODES

    rows = [f"| [{c.code}]({_link(page, f'codes/{c.code}.md')}) | {c.name} | {c.severity} | "
            f"{'yes' if 'S' in c.kinds else ''} | {'yes' if 'R' in c.kinds else ''} | {c.summary} |"
            for c in CODES.values()]
    return "\n".join(["| code | name | severity | lint | doctor | what |", "|---|---|---|---|---|---|", *rows])


def claims_table() -> str:
    """The published claims ``pitstop bench`` checks (``pitstop.bench.claims``), one row each."""
    from pitstop.bench.claims import CLAIMS, claims_for

    def cut(c: Any) -> str:
        return f"{c.low:.1%}" if c.low == c.high else f"{c.low:.0%}-{c.high:.0%}"

    rows = [(key, c) for key in CLAIMS for c in CLAIMS[key]] + [("any model", c) for c in claims_for(None)]
    lines = ["| model | claim | source | variant vs baseline | claimed time cut | batch |", "|---|---|---|---|---|---|"]
    for key, c in rows:
        model = key if key == "any model" else f"`{key}`"
        batch = c.batch_size if c.batch_size is not None else "each measured"
        lines.append(f"| {model} | {c.text} | {c.source} | `{c.variant}` vs `{c.baseline}` | {cut(c)} | {batch} |")
    return "\n".join(lines)


def code_pages() -> dict[str, str]:
    """``codes/PITnnn.md`` -> its Markdown, one per entry of the code table."""
    from pitstop.codes import CODES

    return {f"codes/{code}.md": code_page(code) for code in CODES}


# ---- markers in hand-written pages -----------------------------------------------------------


def expand(markdown: str, page: str) -> str:
    """Replace each ``<!-- pitstop-... -->`` marker of ``page`` (its path under docs/)."""
    makers: dict[str, Callable[[str], str]] = {
        "help": lambda arg: _fence(help_text(arg)),
        "examples": lambda arg: _fence(examples(arg), "bash"),
        "explain": lambda arg: _fence(_explain_help(arg)),
        "commands": lambda _: commands_table(page),
        "codes": lambda _: codes_table(page),
        "claims": lambda _: claims_table(),
        "schema": schema_block,
    }
    markdown = _SNIPPET.sub("", markdown)
    return _MARK.sub(lambda m: makers[m.group(1)]((m.group(2) or "").strip()), markdown)


# ---- mkdocs hooks ----------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in code_pages().items():
        files.append(File.generated(config, path, content=text))
    files.append(File.generated(config, "contributing.md", content=(ROOT / "CONTRIBUTING.md").read_text("utf-8")))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return expand(markdown, page.file.src_uri)
