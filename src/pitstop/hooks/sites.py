"""Where in the user's code something happened: the deepest frame in the user's own files, with
the library frame that did the work after it (``train.py:57 (via lightning/.../apply_func.py:134)``);
torch's and pitstop's frames are never shown."""

from __future__ import annotations

import sys
import traceback
from types import FrameType

from pitstop._frames import kind_of, short_path, site

__all__ = ["crash_site", "format_exception_line", "short_path", "user_site"]


def user_site(skip: int = 2) -> str:
    """``file.py:LINE`` of the innermost caller in the user's files ("" when none), with the
    innermost library frame between it and torch after it."""
    frame: FrameType | None = sys._getframe(skip)
    library = None
    while frame is not None:
        path = frame.f_code.co_filename
        kind = kind_of(path)
        if kind == "user":
            return site((path, frame.f_lineno), library)
        if kind == "library" and library is None:
            library = (path, frame.f_lineno)
        frame = frame.f_back
    return site(None, library)


def crash_site(exc: BaseException) -> str:
    """The deepest traceback frame in the user's files, with the library frame below it that raised."""
    user, library = None, None
    for frame in traceback.extract_tb(exc.__traceback__):
        kind = kind_of(frame.filename)
        if kind == "user":
            user, library = (frame.filename, frame.lineno or 0), None
        elif kind == "library" and user is not None and library is None:
            library = (frame.filename, frame.lineno or 0)
        elif kind == "library" and user is None:
            library = (frame.filename, frame.lineno or 0)
    return site(user, library)


def format_exception_line(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    return "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1][:400]
