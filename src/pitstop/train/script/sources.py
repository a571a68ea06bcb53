"""The variant's process sees the variant's source: the user's files that the variant edits are
compiled from their edited text when imported (and shown so in tracebacks); the rest load as usual.
And the seeds: pitstop seeds ``random``, NumPy and torch before the script runs, and a replica with
seed ``k`` adds ``k`` to every seed the script sets itself (``torch.manual_seed(1337)`` becomes 1338
for replica 1), so the fp32 reference's seeds differ in initialisation and data order even in a
script that seeds itself, while replica 0 runs exactly the script's own seeds."""

from __future__ import annotations

import importlib.machinery
import linecache
import os
import random
from typing import Any


class EditedSources:
    """``{absolute path: edited text}`` served in place of the files on disk."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = {os.path.realpath(p): text for p, text in sources.items()}

    def install(self) -> None:
        if not self.sources:
            return
        for path, text in self.sources.items():
            linecache.cache[path] = (len(text), None, text.splitlines(True), path)  # tracebacks show the edit
        loader = importlib.machinery.SourceFileLoader
        original, sources = loader.get_code, self.sources

        def get_code(self: Any, fullname: str) -> Any:
            path = os.path.realpath(self.path)
            if path in sources:
                return compile(sources[path], path, "exec", dont_inherit=True)
            return original(self, fullname)

        loader.get_code = get_code  # type: ignore[method-assign]


def seed_with_offset(offset: int) -> None:
    """Seed every generator with ``offset`` now, and add ``offset`` to every seed set later."""
    import torch

    random.seed(offset)
    torch.manual_seed(offset)
    try:
        import numpy as np
    except ImportError:  # numpy is a dependency; seeding must never fail
        np = None  # type: ignore[assignment]
    if np is not None:
        np.random.seed(offset % 2**32)
    if offset == 0:
        return  # replica 0 runs the script's own seeds exactly
    _shift(torch, "manual_seed", offset)
    _shift(torch.random, "manual_seed", offset)
    _shift(torch.cuda, "manual_seed", offset)
    _shift(torch.cuda, "manual_seed_all", offset)
    _shift(random, "seed", offset)
    if np is not None:
        _shift(np.random, "seed", offset, modulo=2**32)
        _shift(np.random, "default_rng", offset, modulo=2**32)


def _shift(owner: Any, name: str, offset: int, modulo: int = 2**63) -> None:
    original = getattr(owner, name)

    def move(seed: Any) -> Any:
        return (seed + offset) % modulo if isinstance(seed, int) and not isinstance(seed, bool) else seed

    def shifted(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = (move(args[0]), *args[1:])
        for key in ("seed", "a"):
            if key in kwargs:
                kwargs[key] = move(kwargs[key])
        return original(*args, **kwargs)

    shifted.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(owner, name, shifted)
