"""The fenced blocks of README.md and docs/**/*.md, as the snippet tests read them.

A block may carry one marker on the line just before its opening fence (an HTML comment, so the
site does not show it):

- ``<!-- snippet: skip REASON -->``: not run, for the reason given (a torchrun job, an install);
  tests/docs/test_snippets.py counts these, so a new one is a deliberate change of that test;
- ``<!-- snippet: tested-by tests/PATH.py::TEST -->``: run by that test, which reads this page;
- ``<!-- snippet: slow REASON -->``: a Python block run only with ``-m slow`` (it measures);
- ``<!-- snippet: file NAME -->``: a Python block that is a file the page's commands name
  (``my_metric.py``, ``train.py``): written into the working folder of every command, and run;
- ``<!-- snippet: output-of COMMAND -->``: a ``text`` block that is exactly what COMMAND prints there.

A ``<!-- pitstop-examples COMMAND -->`` line (the examples of ``pitstop COMMAND --help``, which
docs/gen_pages.py puts there when the site is built) is read as the ``bash`` block it becomes, and
takes a marker the same way.

Without a marker, a ``bash`` block's command lines and a ``text`` block's ``$ `` lines are run, a
``python`` block is run, and ``toml``/``yaml`` blocks are parsed; ``text`` blocks are output."""

from __future__ import annotations

import functools
import importlib.util
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(\w*)[^\n]*$")
_MARK = re.compile(r"^<!-- snippet: ([\w-]+)(?: (.+?))? -->$")
_EXAMPLES = re.compile(r"^<!-- pitstop-examples ([\w-]+) -->$")
LANGUAGES = {"bash", "text", "python", "toml", "yaml", "json"}


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # the opening fence's
    lang: str
    text: str
    kind: str = "run"  # run, skip, tested-by, slow, file, output-of
    arg: str = ""
    generated: str = ""  # the command whose --help examples these are
    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


@functools.cache
def gen_pages() -> ModuleType:
    """docs/gen_pages.py (the mkdocs hook), loaded as a plain module."""
    spec = importlib.util.spec_from_file_location("pitstop_docs_gen_pages", ROOT / "docs" / "gen_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        mark = _MARK.match(lines[i - 1]) if i else None
        examples = _EXAMPLES.match(lines[i])
        if examples is not None:
            found.append(Block(str(page.relative_to(ROOT)), i + 1, "bash", gen_pages().examples(examples[1]) + "\n",
                               *((mark[1], mark[2] or "") if mark else ("run", "")), generated=examples[1]))
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"{page}:{i + 1}: a fence is never closed"
        found.append(Block(str(page.relative_to(ROOT)), i + 1, fence[1], "\n".join(lines[i + 1:end]) + "\n",
                           *((mark[1], mark[2] or "") if mark else ())))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page)]


def command_lines(block: Block) -> list[str]:
    """A shell block's commands (continuations joined), or a text block's ``$ `` lines."""
    text = re.sub(r"\\\n\s*", " ", block.text)
    if block.lang == "text":
        return [line[2:] for line in text.splitlines() if line.startswith("$ ")]
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if block.generated:  # a --help's examples may show other commands (`git apply`, `torchrun`): not_pitstop()
        lines = [line for line in lines if line.startswith("pitstop ")]
    return lines


def not_pitstop(block: Block) -> list[str]:
    """The lines of a --help's examples that are not pitstop commands."""
    return [line for line in block.text.splitlines() if line.strip() and not line.startswith(("pitstop ", " "))]


def argv(line: str) -> tuple[list[str], str | None]:
    """``pitstop ARGS [> FILE]  # comment`` -> (ARGS, FILE)."""
    words = shlex.split(line, comments=True)
    out = None
    if ">" in words:
        out = words[words.index(">") + 1]
        words = words[:words.index(">")]
    assert words[0] == "pitstop", f"not a pitstop command: {line!r} (mark its block skip, with the reason)"
    return words[1:], out


def readme_table_commands() -> list[str]:
    """The commands in the README's table "your question -> the command"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [m for row in text.splitlines() if row.startswith("| ") for m in re.findall(r"`(pitstop [^`]+)`", row)]
