"""flake8 plugin: ``flake8 --select PIT`` runs pitstop's lint rules (entry point ``PIT``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from pitstop import __version__


class Plugin:
    """flake8 hands over the parsed tree and the lines; findings come back as flake8 tuples."""

    name = "pitstop"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str = "", lines: list[str] | None = None) -> None:
        self.tree, self.filename, self.lines = tree, filename, lines

    def run(self) -> Iterator[tuple[int, int, str, Any]]:
        from pitstop.lint.engine import lint_source

        source = "".join(self.lines) if self.lines is not None else ast.unparse(self.tree)
        for d in lint_source(source, self.filename):
            yield d.line, d.col - 1, f"{d.code} {d.message}", type(self)
