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

Without a marker, a ``bash`` block's command lines and a ``text`` block's ``$ `` lines are run, a
``python`` block is run, and ``toml``/``yaml`` blocks are parsed; ``text`` blocks are output."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(\w*)[^\n]*$")
_MARK = re.compile(r"^<!-- snippet: ([\w-]+)(?: (.+?))? -->$")
LANGUAGES = {"bash", "text", "python", "toml", "yaml", "json"}


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # the opening fence's
    lang: str
    text: str
    kind: str = "run"  # run, skip, tested-by, slow, file
    arg: str = ""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"{page}:{i + 1}: a fence is never closed"
        mark = _MARK.match(lines[i - 1]) if i else None
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
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


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
