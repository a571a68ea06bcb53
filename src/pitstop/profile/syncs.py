"""Host-device syncs at their source lines, and host-to-device copies, while a profile runs.

The few Tensor methods that make the host wait for the device's values are wrapped between
``install`` and ``uninstall`` (the session's ``on_finish``): ``.item()``, ``.tolist()``,
``.numpy()``, ``.cpu()``, ``.nonzero()`` (and ``torch.nonzero``), ``float()``/``int()`` of a
tensor, ``print()``/f-strings of a tensor, and a tensor used as a condition (``if loss > 0:``,
data-dependent control flow). With CUDA in use, ``.to()``/``.cuda()`` are wrapped too: copies from
the host to the device are the ``h2d`` phase, copies back are syncs.

A call counts when the user's code makes it, in the training loop's own process and thread (a
DataLoader worker's or the pin-memory thread's calls are not the step's): directly, or, on a
device tensor, through library code (the line reported is the user's). Calls inside torch on host
tensors (an optimizer reading its step counter) and pitstop's own reads are not the user's syncs
and are left alone. Time is the host's wall time inside the call (on CUDA: the wait for the device
the call caused)."""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from typing import Any

import torch

from pitstop._frames import kind_of, site
from pitstop.hooks.session import Consumer
from pitstop.profile.phases import PhaseTimer

_TORCH = os.path.dirname(torch.__file__)
_PITSTOP = os.path.dirname(os.path.dirname(__file__))
KINDS = {"item": ".item()", "tolist": ".tolist()", "numpy": ".numpy()", "cpu": ".cpu()", "nonzero": ".nonzero()",
         "__bool__": "tensor as a condition (data-dependent control flow)", "__float__": "float(tensor)",
         "__int__": "int(tensor)", "__repr__": "print(tensor)", "__format__": "print(tensor) / f-string"}


class SyncWatch(Consumer):
    """Counts and times syncs per source line over the measured steps (``per_step``)."""

    def __init__(self, timer: PhaseTimer, excluded: Any = lambda step: step == 1) -> None:
        self.timer = timer
        self.excluded = excluded
        self.totals: dict[tuple[str, str], list[float]] = {}  # (where, kind) -> [calls, seconds]
        self.by_step: dict[tuple[str, str], list[float]] = {}  # (where, kind) -> seconds in each measured step
        self.steps = 0  # measured steps the totals cover
        self._current: dict[tuple[str, str], list[float]] = {}
        self._saved: list[tuple[Any, str, Any, bool]] = []
        self._inside = False
        self._sites: dict[tuple[Any, ...], str] = {}  # (user file, line, library frame) -> its site text, made once
        self._owner = (os.getpid(), threading.get_ident())  # the training loop's process and thread

    # -- wrapping -------------------------------------------------------------------------------

    def install(self, copies: bool = False) -> None:
        """Wrap the syncing methods (and, with ``copies``, ``.to``/``.cuda`` for the h2d phase)."""
        if self._saved:
            return
        self._owner = (os.getpid(), threading.get_ident())
        for name, kind in KINDS.items():
            self._patch(torch.Tensor, name, self._wrap(getattr(torch.Tensor, name), kind))
        self._patch(torch, "nonzero", self._wrap(torch.nonzero, ".nonzero()"))
        if copies:
            self._patch(torch.Tensor, "to", self._wrap_copy(torch.Tensor.to, False))
            self._patch(torch.Tensor, "cuda", self._wrap_copy(torch.Tensor.cuda, True))

    def uninstall(self) -> None:
        """Restore every wrapped method."""
        for owner, name, orig, own in reversed(self._saved):
            if own:
                setattr(owner, name, orig)
            else:
                delattr(owner, name)
        self._saved.clear()

    def _patch(self, owner: Any, name: str, wrapper: Any) -> None:
        own = name in vars(owner)
        self._saved.append((owner, name, vars(owner)[name] if own else None, own))
        setattr(owner, name, wrapper)

    def _wrap(self, orig: Any, kind: str) -> Any:
        watch = self

        def synced(*args: Any, **kwargs: Any) -> Any:
            tensor = args[0] if args else kwargs.get("input")  # torch.nonzero(input=t) too
            if watch._inside or not isinstance(tensor, torch.Tensor):
                return orig(*args, **kwargs)
            where = watch._where(sys._getframe(1), tensor.device.type != "cpu")
            if where is None:
                return orig(*args, **kwargs)
            return watch._timed(orig, args, kwargs, where, kind)

        synced.__name__ = getattr(orig, "__name__", kind)
        synced.__doc__ = getattr(orig, "__doc__", None)
        return synced

    def _wrap_copy(self, orig: Any, to_cuda: bool) -> Any:
        watch = self

        def copied(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if watch._inside:
                return orig(tensor, *args, **kwargs)
            target = "cuda" if to_cuda else _target(args, kwargs)
            mine = (os.getpid(), threading.get_ident()) == watch._owner
            if tensor.device.type == "cpu" and target == "cuda" and mine:
                watch._inside = True
                watch.timer.enter("h2d")
                try:
                    return orig(tensor, *args, **kwargs)
                finally:
                    watch.timer.leave("h2d")
                    watch._inside = False
            if tensor.device.type == "cuda" and target == "cpu":
                where = watch._where(sys._getframe(1), True)
                if where is not None:
                    return watch._timed(orig, (tensor, *args), kwargs, where, ".to('cpu')")
            return orig(tensor, *args, **kwargs)

        copied.__name__ = getattr(orig, "__name__", "to")
        copied.__doc__ = getattr(orig, "__doc__", None)
        return copied

    def _timed(self, orig: Any, args: tuple[Any, ...], kwargs: dict[str, Any], where: str, kind: str) -> Any:
        if (os.getpid(), threading.get_ident()) != self._owner:  # a DataLoader worker, a pin-memory thread
            return orig(*args, **kwargs)
        self._inside = True
        self.timer.enter("sync")
        start = time.perf_counter()
        try:
            return orig(*args, **kwargs)
        finally:
            spent = time.perf_counter() - start
            self.timer.leave("sync")
            self._inside = False
            record = self._current.setdefault((where, kind), [0, 0.0])
            record[0] += 1
            record[1] += spent

    def _where(self, frame: Any, on_device: bool) -> str | None:
        """The user's ``file:line`` for a call made from ``frame`` (the deepest frame in the user's
        files, the library frame that made the call after it); None for pitstop's and torch's own."""
        library = None
        while frame is not None:
            path = frame.f_code.co_filename
            kind = kind_of(path)
            if kind == "user":
                key = (path, frame.f_lineno, library)
                text = self._sites.get(key)
                if text is None:  # made once per line: a relative path is a syscall and string work (~7 us)
                    text = self._sites[key] = site((path, frame.f_lineno), library)
                return text
            if path.startswith(_PITSTOP) or (not on_device and path.startswith(_TORCH)):
                return None  # pitstop's own call, or torch calling itself on the host
            if kind == "library" and library is None:
                library = (path, frame.f_lineno)
            frame = frame.f_back
        return site(None, library) or None

    # -- session events ---------------------------------------------------------------------------

    def on_iteration(self, step: int) -> None:
        if not self.excluded(step):
            self.steps += 1
            for key, (calls, seconds) in self._current.items():
                total = self.totals.setdefault(key, [0, 0.0])
                total[0] += calls
                total[1] += seconds
                spent = self.by_step.setdefault(key, [])
                spent += [0.0] * (self.steps - 1 - len(spent)) + [seconds]
        self._current = {}

    def on_finish(self) -> None:
        self.uninstall()

    def rows(self) -> list[dict[str, Any]]:
        """``{"where", "kind", "per_step", "ms"}`` per line and kind, the costliest first (``per_step``:
        calls per measured step; ``ms``: the median over the measured steps of the time spent there)."""
        n = max(self.steps, 1)
        rows = []
        for (where, kind), (calls, _) in self.totals.items():
            spent = self.by_step[(where, kind)]
            spent = spent + [0.0] * (n - len(spent))
            rows.append({"where": where, "kind": kind, "per_step": calls / n, "ms": statistics.median(spent) * 1e3})
        return sorted(rows, key=lambda r: (-r["ms"], r["where"]))


def _target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The device type a ``.to(...)`` call moves to (None: same device, a dtype change only)."""
    for value in (kwargs.get("device"), *args):
        if isinstance(value, torch.Tensor):
            return value.device.type
        if isinstance(value, (str, torch.device)):
            return torch.device(value).type
        if isinstance(value, int) and not isinstance(value, bool):
            return "cuda"
    return None
