"""What every command does with its results: the console, --json (file or stdout), --html, and progress.

``Output`` is the routine, once: a handler makes ``Output(args.json, args.html)`` before the run
(both paths are checked then, not after minutes of measuring), streams partial results to
``output.json_file`` if it wants, and ends with ``output.finish(items, document)``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pitstop._format import literal
from pitstop._io import check_writable, write_result
from pitstop.errors import UsageError


def _console(to_stdout: bool) -> Any:
    """The report's console: stderr when the JSON goes to stdout; wide in pipes and CI."""
    from rich.console import Console

    console = Console(stderr=to_stdout, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # pipes and CI: wide, so the tables stay readable
    return console


def _print(console: Any, items: list[Any], to_json: Any, json_arg: str | None) -> None:
    """The report, then the JSON on stdout (``--json -``) or a note of where it was written."""
    for item in items:
        if isinstance(item, str):  # text as it is: a script's path may hold [brackets]
            console.print(item, markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(literal(item))
    if json_arg == "-":
        print(to_json())
    elif json_arg:
        console.print(f"JSON written to {json_arg}", style="dim", markup=False)


def _html(path: str | None, doc: dict[str, Any]) -> None:
    """``--html FILE``: the self-contained report for the command's JSON document."""
    if path:
        from pitstop.report.pages import write_html

        write_html(path, doc)
        print(f"HTML report written to {path}", file=sys.stderr)


class Output:
    """``--json FILE`` (``-`` = stdout, the console then on stderr), ``--html FILE`` and the console
    of one command. Both paths are checked when it is made, before the run starts."""

    def __init__(self, json_path: str | None = None, html_path: str | None = None) -> None:
        self.json_path, self.html_path = json_path, html_path
        if self.json_file:
            check_writable(self.json_file, "--json")
        if html_path:
            check_writable(html_path, "--html")
        self.console = _console(self.to_stdout)

    @property
    def to_stdout(self) -> bool:
        """The JSON goes to stdout (``--json -``)."""
        return self.json_path == "-"

    @property
    def json_file(self) -> str | None:
        """The ``--json`` file (None with ``-`` or no ``--json``): where partial results may stream."""
        return None if self.to_stdout else self.json_path

    def finish(self, items: list[Any], document: dict[str, Any] | Callable[[], dict[str, Any]]) -> None:
        """Write the JSON file atomically (a run with no results keeps an existing file), print
        ``items`` (text is printed as it is, no markup), then the JSON on stdout or where it went,
        then write the HTML page."""
        doc = document() if callable(document) else document
        kept = self.json_file is not None and not write_result(self.json_file, doc)  # nothing measured: kept
        for item in items:
            if isinstance(item, str):
                self.console.print(item, markup=False, highlight=False, soft_wrap=True)
            else:
                self.console.print(literal(item))  # user strings in tables are text, not markup
        if self.to_stdout:
            print(json.dumps(doc, indent=2, allow_nan=False))
        elif kept:
            self.console.print(f"nothing measured: {self.json_path} left as it was", style="dim", markup=False)
        elif self.json_path:
            self.console.print(f"JSON written to {self.json_path}", style="dim", markup=False)
        _html(self.html_path, doc)


def _check_dir(path: str) -> None:
    """--save must name a directory we can write (before minutes of measuring)."""
    from pathlib import Path

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"--save: {path!r} is a file; give a directory such as out/")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--save: cannot create {path!r} ({exc.strerror}); choose a writable directory") from None


class _progress:
    """A rich progress bar on a TTY; silent in pipes and CI."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not self.console.is_terminal:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                            console=self.console, transient=True)
        self.bar.start()
        self.task = self.bar.add_task("starting workers", total=1.0)
        return self.on_event

    def on_event(self, kind: str, info: dict[str, Any]) -> None:
        from rich.markup import escape

        if kind == "group":
            self.batch = info["batch_size"]

            self.bar.update(self.task, completed=0, description=f"b={self.batch}: starting workers")
        elif kind == "phase":
            self.bar.update(self.task, description=escape(info["text"]))  # it may name a user's path
        elif kind == "round":
            live = [v for v in info["live"] if v.alive and v.row.samples_s]
            if live:
                self.bar.update(self.task, **_round_progress(self.batch, info["round"], live, info["policy"]))

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.stop()


def _round_progress(batch: int, round_no: int, live: list[Any], policy: Any) -> dict[str, Any]:
    """Bar position: each variant is done when precise enough or out of budget; the slowest counts."""
    from pitstop.bench.timer import precision

    widths = [precision(v.row.replica_samples_s) for v in live]
    done = min(max(v.spent_s / policy.budget_s, min(1.0, policy.target / max(w, 1e-9)))
               for v, w in zip(live, widths, strict=True))
    text = f"b={batch} round {round_no}: widest interval ±{max(widths):.1%} (target ±{policy.target:.0%})"
    return {"completed": done, "description": text}
