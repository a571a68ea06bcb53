"""Where in the user's code something happened: ``file.py:LINE`` outside torch and pitstop."""

from __future__ import annotations

import os
import sys
import traceback

import torch

_SKIP_FILES = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)), "<frozen ")


def user_site(skip: int = 2) -> str:
    """``file.py:LINE`` of the innermost caller outside torch and pitstop ("" when none)."""
    frame = sys._getframe(skip)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_SKIP_FILES) and "/runpy.py" not in path:
            return f"{short_path(path)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def crash_site(exc: BaseException) -> str:
    """``file.py:LINE`` of the innermost traceback frame outside torch and pitstop."""
    site = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if not frame.filename.startswith(_SKIP_FILES) and "runpy" not in frame.filename:
            site = f"{short_path(frame.filename)}:{frame.lineno}"
    return site


def short_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def format_exception_line(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    return "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1][:400]
