"""Running the rules: every file is read and parsed once, indexed into the project
(``pitstop.lint.project``), then each file's rules run with the project in view, ``# noqa`` and the
configuration applied."""

from __future__ import annotations

import ast
import gc
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pitstop.lint.analysis import Module
from pitstop.lint.config import LintConfig
from pitstop.lint.file_index import FileIndex, index_file, module_names
from pitstop.lint.imports import MAX_FILES, MAX_ROUNDS, forget, imported_modules, to_read
from pitstop.lint.noqa import suppressed
from pitstop.lint.project import Project, View
from pitstop.lint.requirements import Requirements
from pitstop.lint.rules import INVALID_FILE, RULES, Context, Diagnostic
from pitstop.lint.stack import MAX_DEPTH, at_fixed_depth

# files kept parsed between the two passes; past this they are parsed again. Re-parsing saves little
# memory (the index keeps each file's trees either way: all of torch, 1.2M lines, peaked at 1.97 GB
# re-parsing past 300k lines and 1.99 GB holding it all) and costs a third of the time (79 s vs 58 s)
HELD_LINES = 3_000_000


@dataclass
class FileResult:
    path: str
    findings: list[Diagnostic]
    lines: int
    source: str | None = None  # kept when fixes may apply
    view: View | None = None  # the project as this file sees it (for fixes)


def read_source(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it cannot be read)."""
    if path.exists() and not path.is_file():  # a FIFO named *.py would block the run forever
        return None, "not a regular file (a FIFO, socket or device); it was not read"
    try:
        with open(path, "rb") as f:
            encoding, _ = tokenize.detect_encoding(f.readline)
        return path.read_bytes().decode(encoding), None
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return None, f"cannot decode the file ({exc})"
    except OSError as exc:
        return None, f"cannot read the file ({exc.strerror})"


def write_source(path: Path, text: str) -> None:
    """Write fixed source back in the file's own encoding (its coding cookie, its UTF-8 BOM) and
    line endings (``read_source`` decoded bytes, so ``\\r\\n`` is still in ``text``)."""
    with open(path, "rb") as f:
        encoding, _ = tokenize.detect_encoding(f.readline)
    path.write_bytes(text.encode(encoding))


def parse(source: str, path: str) -> Module | Diagnostic:
    """The file analysed, or the PIT001 finding saying why it cannot be: nested past ``MAX_DEPTH``
    (measured, so the verdict does not depend on the stack ``ast.parse`` was called from)."""
    try:
        tree = ast.parse(source, filename=path, type_comments=False)
    except (RecursionError, MemoryError):  # 3.11's parser reports its fixed 6000-level stack as MemoryError
        return Diagnostic("PIT001", INVALID_FILE.variants["nested"].format(rule="the parser"), 1, 1, 1, 1, None, path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        msg = getattr(exc, "msg", str(exc))
        return Diagnostic("PIT001", INVALID_FILE.message.format(msg=msg), line, col, line, col, None, path)
    mod = Module.of(tree, source)  # an iterative walk: no depth is too deep for it
    if mod.depth > MAX_DEPTH:
        message = INVALID_FILE.variants["deep"].format(depth=mod.depth, limit=MAX_DEPTH)
        return Diagnostic("PIT001", message, 1, 1, 1, 1, None, path)
    return mod


def safe_index(mod: Module, path: str, root: Path | None) -> FileIndex:
    """The file's index; one nested too deeply to summarise joins the project with its names only."""
    try:
        return index_file(mod, path, root)
    except RecursionError:
        return FileIndex(path, module_names(path, root), dict(mod.aliases), {}, {}, {}, [], "cuda" in mod.source,
                         mod.trains)


def check(mod: Module, path: str, config: LintConfig, view: View | None = None) -> list[Diagnostic]:
    """Every selected rule on one analysed file; ``# noqa`` applied; sorted by place."""
    mod.view = view
    if view is not None:
        view.mod, view.helper_backwards = mod, None
    lines = mod.source.splitlines(keepends=True)
    ctx = Context(mod, path, lines, view)
    for rule in RULES:
        if not config.wants(rule.code, path):
            continue
        try:
            rule.check(ctx)
        except RecursionError:
            message = INVALID_FILE.variants["nested"].format(rule=rule.name)
            ctx.found.append(Diagnostic("PIT001", message, 1, 1, 1, 1, None, path))
    mod.view = None  # no cycle between a file's tree and its view: both go as soon as they can
    if view is not None:
        view.mod, view.helper_backwards = None, None
    kept = [d for d in ctx.found if config.wants(d.code, path) and not suppressed(d, lines)]
    unique = {(d.code, d.line, d.col, d.message): d for d in kept}
    return sorted(unique.values(), key=lambda d: (d.line, d.col, d.code))


def lint_source(source: str, path: str, config: LintConfig | None = None, view: View | None = None
                ) -> list[Diagnostic]:
    """Findings for one file's text: a project of its own unless ``view`` places it in one. Run at a
    fixed stack depth (``pitstop.lint.stack``): the same text gets the same findings from any caller."""
    return at_fixed_depth(lambda: _lint_source(source, path, config, view))


def _lint_source(source: str, path: str, config: LintConfig | None, view: View | None) -> list[Diagnostic]:
    config = config or LintConfig()
    parsed = parse(source, path)
    if isinstance(parsed, Diagnostic):
        return [parsed] if config.wants(parsed.code, path) else []
    if view is None:
        view = Project.build([safe_index(parsed, path, None)]).view(0)
    return check(parsed, path, config, view)


def imported_indexes(importers: list[tuple[Path, set[str]]], known: set[Path], root: Path | None) -> list[FileIndex]:
    """The indexes of the project files the linted ones import, found on disk (``pitstop.lint.imports``):
    facts for the project view, never linted; after the linted files', so their views keep their numbers."""
    found: list[FileIndex] = []
    forget()
    for _ in range(MAX_ROUNDS):
        importers_next = []
        for path in to_read(importers, known, root)[:MAX_FILES - len(found)]:
            source, _ = read_source(path)
            parsed = parse(source, str(path)) if source is not None else None
            if isinstance(parsed, Module):
                found.append(safe_index(parsed, str(path), root))
                importers_next.append((path, imported_modules(parsed.aliases, parsed.star_modules)))
        importers = importers_next
    return found


def lint_files(files: list[Path], config: LintConfig, keep_source: bool = False,
               root: Path | None = None) -> Iterator[FileResult]:
    """The files as one project: a first pass parses and indexes every file, a second runs the
    rules. Parsed files are held between the passes up to ``HELD_LINES`` lines, so a project of that
    size is parsed once; the rest of a larger tree is parsed again rather than kept in memory.
    Consume it inside ``at_fixed_depth`` (as ``pitstop.lint.lint`` does) for caller-independent verdicts."""
    entries: list[tuple[Path, str | None, Module | Diagnostic | None]] = []
    indexes = []
    imports: list[tuple[Path, set[str]]] = []  # each parsed file's imported modules
    held = 0
    enabled = gc.isenabled()
    gc.disable()  # the first pass makes no cycles; collecting while millions of nodes live costs minutes
    try:
        for path in files:
            source, problem = read_source(path)
            if source is None:
                entries.append((path, None, Diagnostic("PIT001", INVALID_FILE.variants["unreadable"].format(
                    problem=problem or "unreadable"), 1, 1, 1, 1, None, str(path))))
                continue
            parsed: Module | Diagnostic | None = parse(source, str(path))
            if isinstance(parsed, Module):
                indexes.append(safe_index(parsed, str(path), root))
                imports.append((path, imported_modules(parsed.aliases, parsed.star_modules)))
                size = source.count("\n") + 1
                if held + size > HELD_LINES:
                    parsed, source = None, None  # read and parsed again in the second pass
                else:
                    held += size
            entries.append((path, source, parsed))
        project = Project.build(indexes + imported_indexes(imports, {p.resolve() for p in files}, root))
        gc.freeze()  # what the first pass keeps is never garbage: later collections skip it
        gc.enable()  # the second pass makes short-lived cycles (rule state): collect them
        requirements = Requirements()
        number = 0
        for k, (path, source, parsed) in enumerate(entries):
            entries[k] = (path, None, None)  # let this file's tree go once it is done
            name = str(path)
            if isinstance(parsed, Diagnostic):
                yield FileResult(name, [parsed] if config.wants(parsed.code, name) else [], 0)
                continue
            view = project.view(number)  # the index of this file (every parsed file has one, in order)
            view.torch_min = requirements.torch_min(path)
            number += 1
            if source is None:
                source, _ = read_source(path)
            if source is None:  # unreadable now: it was readable in the first pass
                continue
            mod = parsed if parsed is not None else parse(source, name)
            findings = check(mod, name, config, view) if isinstance(mod, Module) else []
            yield FileResult(name, findings, source.count("\n") + 1, source if keep_source else None, view)
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()
        else:
            gc.disable()
