"""Which frames are the user's: files outside the standard library, site-packages, torch and
pitstop (and not ``<frozen ...>`` or ``<string>``). Sites are recorded as plain data."""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

from pitstop._frames import is_user_file

_PITSTOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))) + os.sep


def user_frames(frame: FrameType | None) -> list[FrameType]:
    """The user's frames of the stack from ``frame`` outwards, outermost first."""
    found = []
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            found.append(frame)
        frame = frame.f_back
    return found[::-1]


def site_of(frame: FrameType) -> dict[str, Any]:
    """A frame as data: file, line, function and the line its function starts on."""
    code = frame.f_code
    return {"file": os.path.realpath(code.co_filename), "line": frame.f_lineno, "function": code.co_name,
            "first_line": code.co_firstlineno}


def innermost_user_site() -> dict[str, Any] | None:
    """The innermost user frame of the caller's stack, as data (None: no user code on the stack)."""
    frames = user_frames(sys._getframe(1))
    return site_of(frames[-1]) if frames else None


_TORCH = os.path.dirname(os.path.realpath(str(__import__("torch").__file__))) + os.sep


def caller_site() -> dict[str, Any] | None:
    """The frame that called into torch, as data, when it is the user's (a call made by Lightning or
    transformers on the user's behalf has no user site: None)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = os.path.realpath(frame.f_code.co_filename)
        if not (path.startswith(_PITSTOP) or path.startswith(_TORCH)):
            return site_of(frame) if is_user_file(path) else None
        frame = frame.f_back
    return None
