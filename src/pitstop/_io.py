"""Writing results safely: writability checked before a run starts, atomic replacement after."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pitstop.errors import UsageError

_UMASK = os.umask(0o022)  # read once (umask can only be read by setting it), then put back
os.umask(_UMASK)


def check_writable(path: str | os.PathLike[str], flag: str = "--json") -> None:
    """Fail now, with a usage error naming ``flag``, if ``path`` could not be written later."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{flag}: {str(path)!r} is a directory; give a file name such as out.{flag.lstrip('-')}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"{flag}: cannot write {str(path)!r} ({reason}); choose a writable path") from None


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


def write_result(path: str | os.PathLike[str], document: dict[str, Any]) -> bool:
    """Write a result document atomically unless it has nothing to put there: a run that measured
    nothing (``"results": []``, e.g. its first forward failed) never replaces an existing file.
    Returns whether the file was written."""
    if document.get("results") == [] and Path(path).is_file() and Path(path).stat().st_size > 0:
        return False
    write_atomic(path, document)
    return True
