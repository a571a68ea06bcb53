"""Writing results safely: writability checked before a run starts, atomic replacement after."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pitstop.errors import SettingError

_UMASK = os.umask(0o022)  # read once (umask can only be read by setting it), then put back
os.umask(_UMASK)


def check_writable(path: str | os.PathLike[str], field: str = "json_path", suffix: str = "json") -> None:
    """Fail now, with a ``SettingError`` naming ``field`` (the CLI names its flag), if ``path``
    could not be written later; ``suffix``: the kind of file, for the example name."""
    target = Path(path)
    try:  # a name too long for the file system makes even stat() fail (ENAMETOOLONG)
        is_dir = target.is_dir()
        blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
    except OSError as exc:
        raise SettingError(field, f"cannot write {str(path)!r} ({exc.strerror or exc}); choose a writable path"
                           ) from None
    if is_dir:
        raise SettingError(field, f"{str(path)!r} is a directory; give a file name such as out.{suffix}")
    if blocker is not None:
        raise SettingError(field, f"cannot write {str(path)!r} ({str(blocker)!r} is a file, not a folder); choose a "
                                  "writable path")
    made = _missing(target.parent)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SettingError(field, f"cannot write {str(path)!r} ({reason}); choose a writable path") from None
    finally:  # a check leaves nothing behind: the folders are made again when the file is written
        _remove(made)


def _missing(folder: Path) -> list[Path]:
    """The folders on the way to ``folder`` (itself included) that do not exist yet, deepest first."""
    return [p for p in (folder, *folder.parents) if not p.exists()]


def _remove(folders: list[Path]) -> None:
    """Remove the (empty) folders a check made, deepest first."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` so that a reader never sees a half-written file (temp file, then rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; results get the usual mode, as open() would
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    """Write a JSON document atomically (NaN and inf are refused: documents carry null instead)."""
    write_text_atomic(path, json.dumps(document, indent=2, allow_nan=False) + "\n")


def quality(document: dict[str, Any]) -> str:
    """``empty`` (nothing measured: no result rows, no step), ``partial`` (interrupted, incomplete,
    failed, or the script did not end normally) or ``good``."""
    if document.get("results") == []:
        return "empty"
    if document.get("kind") in ("profile", "doctor") and not document.get("steps") \
            and not document.get("findings"):
        return "empty"
    exit_ = document.get("exit")
    status = exit_.get("status") if isinstance(exit_, dict) else None
    if document.get("interrupted") or document.get("complete") is False or document.get("failed") \
            or status not in (None, "ok"):
        return "partial"
    return "good"


def _existing_quality(path: Path) -> str | None:
    """The quality of the pitstop document at ``path`` (None: no file, or not a pitstop document)."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return quality(doc) if isinstance(doc, dict) and "pitstop" in doc and "kind" in doc else None


def partial_path(path: str | os.PathLike[str]) -> Path:
    """Where a partial result goes when a good one is in the way: ``out.json`` -> ``out.partial.json``."""
    target = Path(path)
    return target.with_name(f"{target.stem}.partial{target.suffix or '.json'}")


class ResultFile:
    """``--json FILE`` for one run: written as the run goes and at its end, never replacing a good
    document with a worse one. An empty document (nothing measured) never replaces any file; a
    partial one (interrupted, incomplete, failed) replacing a good one goes to ``partial_path``
    instead. ``where`` is the path last written (None: nothing written)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.where: Path | None = None
        self.kept = False  # a document was not written where asked (kept aside or not at all)

    def write(self, document: dict[str, Any]) -> Path | None:
        """Write ``document`` where the rules allow; returns that path (None: nothing written)."""
        new, old = quality(document), _existing_quality(self.path)
        if self.where == self.path:
            old = None  # our own earlier (partial) write: replace it
        if new == "empty" and self.path.is_file() and self.path.stat().st_size > 0:
            self.kept = True
            return None
        target = partial_path(self.path) if new != "good" and old == "good" else self.path
        write_atomic(target, document)
        if target == self.path and self.where is not None and self.where != self.path:
            self.where.unlink(missing_ok=True)  # the run ended well: its partial file is not needed
        self.kept, self.where = target != self.path, target
        return target

    def note(self) -> str:
        """What happened to the file, in one line for the console."""
        if self.where is None:
            return f"nothing measured: {self.path} left as it was"
        if self.where != self.path:
            return f"the run did not complete: its partial result is in {self.where}; {self.path} (a complete " \
                   "result) left as it was"
        return f"JSON written to {self.path}"


def result_file(path: str | os.PathLike[str] | ResultFile) -> ResultFile:
    """A ``ResultFile`` for ``path`` (checked writable now), or ``path`` itself when it is one
    (the CLI hands its own, so that partial and final writes follow one set of rules)."""
    if isinstance(path, ResultFile):
        return path
    check_writable(path)
    return ResultFile(path)


SAVED = ("recipe.py", "recipe.json", "speedup.diff", "model*.onnx*")  # what --save writes: all it may replace


def check_folder(path: str | os.PathLike[str], field: str = "save") -> Path:
    """The absolute ``path`` of a folder ``write_folder`` can replace later, or a ``SettingError``
    naming ``field``: not a file, holding nothing but what pitstop saves there, it and its parent
    writable."""
    from pitstop.errors import SettingError

    target = Path(path).absolute()
    if target.exists() and not target.is_dir():
        raise SettingError(field, f"{str(path)!r} is a file; give a directory such as out/")
    blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise SettingError(field, f"cannot write {str(path)!r} ({str(blocker)!r} is a file, not a folder); choose "
                                  "a writable directory")
    if target.is_dir():
        foreign = sorted(p.name for p in target.iterdir() if not any(p.match(g) for g in SAVED))
        if foreign:
            raise SettingError(field, f"{str(path)!r} holds files pitstop did not write ({', '.join(foreign[:3])}); "
                                      "give a new or empty directory")
    made = _missing(target.parent)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent)
        os.rmdir(probe)
        if target.is_dir():  # its old files go when it is replaced: the folder itself must be writable
            fd, inside = tempfile.mkstemp(prefix=".pitstop-", dir=target)
            os.close(fd)
            os.unlink(inside)
    except OSError as exc:
        raise SettingError(field, f"cannot write {str(path)!r} ({exc.strerror or exc}); choose a writable "
                                  "directory") from None
    finally:
        _remove(made)
    return target


def write_folder(path: str | os.PathLike[str], files: dict[str, str | bytes | Path]) -> list[str]:
    """Write ``files`` (name -> text, bytes, or a file to copy in) as the folder ``path``, all at
    once: they are written into a new folder beside it, which then replaces ``path`` by renaming; a
    failure on the way leaves ``path`` as it was. Returns the paths written."""
    import shutil

    target = check_folder(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    try:
        os.chmod(staging, 0o777 & ~_UMASK)
        for name, data in files.items():
            file = staging / name
            if isinstance(data, Path):
                shutil.copyfile(data, file)
            else:
                file.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
            os.chmod(file, 0o666 & ~_UMASK)
        _swap(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [str(target / name) for name in files]


def _swap(staging: Path, target: Path) -> None:
    """``staging`` becomes ``target``; an old ``target`` is removed only once the rename succeeded."""
    import shutil

    if not target.exists():
        os.rename(staging, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
