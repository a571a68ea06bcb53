"""Whether a file can be analysed must not depend on who asks.

CPython's limits on deep code depend on the caller: ``ast.parse`` (3.10 and 3.11) builds its tree
with a budget of three times the frames left under the recursion limit, and the rules' recursive
walks get whatever frames are left. So a 3,000-term ``a + a + ...`` was "too deep" at the top of a
fresh process, analysable once ``torch.compile`` had raised the limit to 2000 for good, and a
1,000-term one too deep when ``lint`` was called from 800 frames down.

Two things make the verdict a property of the file alone:

- ``MAX_DEPTH``: the nesting past which a file is PIT001, measured on the tree by an iterative walk
  (``Module.of``), whatever the interpreter would have managed;
- ``at_fixed_depth``: the analysis runs on a fresh thread (its own stack, a known depth) with the
  recursion limit at least ``FRAMES``, so everything up to ``MAX_DEPTH`` always fits.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

MAX_DEPTH = 1000  # syntax-tree levels analysed; torch 2.13's own source nests 93 at most
FRAMES = 20 * MAX_DEPTH  # the recursion limit while analysing: the deepest rule walk takes ~3 frames a level
STACK_BYTES = 256 << 20  # the worker's C stack: room for FRAMES frames (3.11 recurses in C through generators)

_ONE_AT_A_TIME = threading.Lock()  # the recursion limit is the interpreter's: one run raises and restores it
_worker = threading.local()


def at_fixed_depth(fn: Callable[[], T]) -> T:
    """``fn()`` on a fresh thread of its own stack, with the recursion limit at least ``FRAMES``;
    its result or its exception comes back here. Called from that thread, ``fn()`` runs in place."""
    if getattr(_worker, "inside", False):
        return fn()
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        _worker.inside = True
        try:
            results.append(fn())
        except BaseException as exc:  # handed to the caller's thread, which raises it
            errors.append(exc)

    with _ONE_AT_A_TIME:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, FRAMES))  # only raised: other threads lose nothing
        try:
            _start(run).join()
        finally:
            sys.setrecursionlimit(previous)
    if errors:
        raise errors[0]
    return results[0]


def _start(target: Callable[[], object]) -> threading.Thread:
    """A daemon thread (Ctrl-C in the caller ends the run) with a ``STACK_BYTES`` stack, started."""
    try:
        size = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that cannot set it: its default stack
        size = None
    try:
        worker = threading.Thread(target=target, name="pitstop-lint", daemon=True)
        worker.start()  # the stack size is read here
    finally:
        if size is not None:
            threading.stack_size(size)
    return worker
