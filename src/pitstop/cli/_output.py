"""What every command does with its results: the console, --json (file or stdout), --html, and progress.

``Output`` is the routine, once: a handler makes ``Output(args.json, args.html)`` before the run
(both paths are checked then, not after minutes of measuring), streams partial results to
``output.json_file`` if it wants, and ends with ``output.finish(document)``: ``pitstop.report``
renders the document, as ``pitstop report FILE.json`` does later."""

from __future__ import annotations

import json
import sys
from typing import Any

from pitstop._io import ResultFile, check_writable
from pitstop.errors import UsageError


def _console(to_stdout: bool) -> Any:
    """The report's console: stderr when the JSON goes to stdout; wide in pipes and CI."""
    from rich.console import Console

    console = Console(stderr=to_stdout, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # pipes and CI: wide, so the tables stay readable
    return console


def _html(path: str | None, doc: dict[str, Any]) -> None:
    """``--html FILE``: the self-contained report for the command's JSON document."""
    if not path:
        return
    from pathlib import Path

    from pitstop.report import html

    target = Path(path)
    if target.is_dir():
        raise UsageError(f"--html: {path!r} is a directory; give a file name such as report.html")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html(doc), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--html: cannot write {path!r} ({exc.strerror}); choose a writable path") from None
    print(f"HTML report written to {path}", file=sys.stderr)


class Output:
    """``--json FILE`` (``-`` = stdout, the console then on stderr), ``--html FILE`` and the console
    of one command. Both paths are made absolute and checked when it is made, before the run starts
    (a script that changes directory cannot move them); ``result`` writes the JSON by the rules of
    ``ResultFile`` (a good document is never replaced by an empty, partial or failed one)."""

    def __init__(self, json_path: str | None = None, html_path: str | None = None) -> None:
        import os

        from pitstop.cli._args import flag_errors

        with flag_errors():
            if json_path not in (None, "-"):
                check_writable(json_path, "json")  # as the user typed it: the message names it so
            if html_path:
                check_writable(html_path, "html", "html")
        self.json_path = json_path if json_path in (None, "-") else os.path.abspath(json_path)
        self.html_path = os.path.abspath(html_path) if html_path else None
        self.shown_json = json_path  # as the user typed it, for messages
        self.result = ResultFile(self.json_file) if self.json_file else None
        self.console = _console(self.to_stdout)

    @property
    def to_stdout(self) -> bool:
        """The JSON goes to stdout (``--json -``)."""
        return self.json_path == "-"

    @property
    def json_file(self) -> str | None:
        """The ``--json`` file (None with ``-`` or no ``--json``): where partial results may stream."""
        return None if self.to_stdout else self.json_path

    def stream(self, document: dict[str, Any]) -> None:
        """A partial document while the run goes on (the same rules as the final one)."""
        if self.result is not None:
            self.result.write(document)

    def finish(self, document: dict[str, Any], items: list[Any] | None = None) -> None:
        """Write the JSON file, print the document's report (``items`` instead, where given: text is
        printed as it is, no markup), then the JSON on stdout or where it went, then the HTML page."""
        from pitstop.report import renderables

        doc = document
        if self.result is not None:
            self.result.write(doc)
        from pitstop.report import print_to

        print_to(self.console, renderables(doc) if items is None else items)  # table strings are text, not markup
        if self.to_stdout:
            print(json.dumps(doc, indent=2, allow_nan=False))
        elif self.result is not None:
            self.console.print(self.result.note(), style="dim", markup=False)
        _html(self.html_path, doc)


def unmarked(text: str) -> str:
    """``text`` for a rich status line or progress bar: its [brackets] shown, never read as markup."""
    from rich.markup import escape

    return str(escape(text))


def check_trace_dir(path: str) -> str:
    """--trace DIR: a folder that can be created and written, absolute (checked before the run)."""
    import os
    import tempfile
    from pathlib import Path

    target = Path(path).absolute()
    if target.exists() and not target.is_dir():
        raise UsageError(f"--trace: {path!r} is a file; give a directory such as traces/")
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".pitstop-", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"--trace: cannot write {path!r} ({exc.strerror or exc}); choose a writable "
                         "directory") from None
    return str(target)


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
    from pitstop.engine.timer import precision

    widths = [precision(v.row.replica_samples_s) for v in live]
    done = min(max(v.spent_s / policy.budget_s, min(1.0, policy.target / max(w, 1e-9)))
               for v, w in zip(live, widths, strict=True))
    text = f"b={batch} round {round_no}: widest interval ±{max(widths):.1%} (target ±{policy.target:.0%})"
    return {"completed": done, "description": text}
