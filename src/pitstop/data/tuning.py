"""DataLoader settings chosen by measurement: batches per second after the first batch, and the
time to the first batch, over num_workers / persistent_workers / prefetch_factor (and
pin_memory with CUDA), in interleaved trials; the foundation's statistics decide."""

from __future__ import annotations

import math
import multiprocessing
import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from pitstop._document import envelope
from pitstop._settings import normalise, with_options
from pitstop.errors import SettingError, UsageError, last_line
from pitstop.stats import Ratio, speedup

DEFAULTS: dict[str, Any] = {"num_workers": 0}


@dataclass
class Trial:
    """One loader configuration and what it measured."""

    kwargs: dict[str, Any]
    batch_s: list[float] = field(default_factory=list)  # seconds per batch, after each trial's first batch
    first_s: list[float] = field(default_factory=list)  # time to the first batch of each trial
    status: str = "ok"  # ok | failed | skipped
    reason: str = ""
    vs_default: Ratio | None = None
    loader: Any = None
    iterator: Any = None

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.kwargs.items()) or "defaults (num_workers=0)"

    @property
    def batches_per_s(self) -> float | None:
        if not self.batch_s:
            return None
        s = sorted(self.batch_s)
        return 1.0 / s[len(s) // 2] if s[len(s) // 2] > 0 else None

    @property
    def first_batch_ms(self) -> float | None:
        if not self.first_s:
            return None
        s = sorted(self.first_s)
        return s[len(s) // 2] * 1e3

    def to_dict(self) -> dict[str, Any]:
        return {"kwargs": self.kwargs, "status": self.status, "reason": self.reason or None,
                "batches_per_s": self.batches_per_s, "first_batch_ms": self.first_batch_ms,
                "samples_ms": [t * 1e3 for t in self.batch_s],
                "speedup": None if self.vs_default is None else
                {"median": self.vs_default.median, "ci95": list(self.vs_default.ci95),
                 "verdict": self.vs_default.verdict}}


@dataclass
class LoaderChoice:
    """The settings to use, their measured gain over the defaults, and every trial."""

    kwargs: dict[str, Any]
    gain: Ratio | None
    trials: list[Trial]
    verdict: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return envelope("data", best=self.kwargs, verdict=self.verdict,
                        gain=None if self.gain is None else {"median": self.gain.median, "ci95": list(self.gain.ci95)},
                        trials=[t.to_dict() for t in self.trials], notes=self.notes)

    def __str__(self) -> str:
        return self.verdict


def _grid(max_workers: int, cuda: bool) -> list[dict[str, Any]]:
    counts = sorted({n for n in (1, 2, 4, 8, 16, 32) if n <= max_workers} | {max_workers})
    grid: list[dict[str, Any]] = [dict(DEFAULTS)]
    for n in counts:
        grid.append({"num_workers": n, "persistent_workers": True})
    best_guess = counts[-1] if counts else 0
    if best_guess:
        grid.append({"num_workers": best_guess, "persistent_workers": True, "prefetch_factor": 4})
        grid.append({"num_workers": best_guess, "persistent_workers": False})
    if cuda:
        grid += [{**g, "pin_memory": True} for g in grid[:]]
    return grid


@dataclass(frozen=True)
class LoaderSettings:
    """What ``tune_loader`` tries and for how long."""

    batch_size: int = 32
    time_budget_s: float = 60.0  # interleaved rounds go on until this is spent (two rounds at least)
    max_workers: int | None = None  # largest num_workers tried (None: 2x the cores)
    batches_per_trial: int = 20  # batches per setting per round
    candidates: tuple[dict[str, Any], ...] | None = None  # the settings to try (None: the grid); defaults first
    multiprocessing_context: str | None = None  # None: the platform's start method
    shuffle: bool = False

    def __post_init__(self) -> None:
        for name in ("batch_size", "time_budget_s", "batches_per_trial"):
            if not getattr(self, name) > 0:
                raise SettingError(name, f"must be positive, got {getattr(self, name)}")
            if getattr(self, name) == math.inf:
                raise SettingError(name, f"must be a finite number, got {getattr(self, name)}")
        if self.max_workers is not None and self.max_workers < 1:
            raise SettingError("max_workers", f"must be positive, got {self.max_workers}")
        if self.candidates is not None:
            normalise(self, "candidates", tuple(dict(c) for c in self.candidates))


def tune_loader(dataset: Dataset, batch_size: int | None = None, collate_fn: Callable[..., Any] | None = None, *,
                settings: LoaderSettings | None = None, on_event: Callable[[str], None] | None = None,
                **options: Any) -> LoaderChoice:
    """Measure loader settings on ``dataset`` and return the best, with its gain and interval;
    "keep the defaults" when nothing is faster beyond noise. ``options`` are ``LoaderSettings``
    fields (``time_budget_s``, ``max_workers``, ``batches_per_trial``, ``candidates``,
    ``multiprocessing_context``, ``shuffle``), applied over ``settings``; ``batch_size`` too
    (default 32)."""
    if batch_size is not None:
        options = {"batch_size": batch_size, **options}
    s = with_options(LoaderSettings, settings, options, "tune_loader")
    max_workers = s.max_workers if s.max_workers is not None else 2 * (os.cpu_count() or 1)
    cuda = torch.cuda.is_available()
    grid = list(s.candidates) if s.candidates is not None else _grid(max_workers, cuda)
    if not grid or grid[0].get("num_workers", 0) != 0:
        grid = [dict(DEFAULTS), *grid]
    notes: list[str] = []
    context = s.multiprocessing_context or multiprocessing.get_start_method(allow_none=True) or "fork"
    unpicklable = _pickle_problem(dataset, collate_fn)
    trials = [Trial(dict(kw)) for kw in grid]
    for t in trials:
        if t.kwargs.get("num_workers", 0) and unpicklable:
            if context != "fork":
                t.status, t.reason = "skipped", f"the dataset cannot be pickled for {context} workers: {unpicklable}"
    if unpicklable:
        notes.append(f"the dataset cannot be pickled ({unpicklable}): workers work only with the fork start method "
                     f"(Linux); macOS, Windows and Python 3.14's forkserver default need a picklable dataset")
    deadline = time.monotonic() + s.time_budget_s
    rounds = 0
    try:
        while time.monotonic() < deadline or rounds < 2:
            live = [t for t in trials if t.status == "ok"]
            if not live:
                break
            order = live[rounds % len(live):] + live[: rounds % len(live)]
            for t in order:
                if on_event:
                    on_event(f"round {rounds + 1}: {t.label}")
                _trial(t, dataset, collate_fn, s)
            rounds += 1
            if rounds >= 2 and time.monotonic() >= deadline:
                break
    finally:
        for t in trials:
            _close(t)
    base = trials[0]
    if base.status != "ok" or len(base.batch_s) < 3:
        raise UsageError(f"the dataset could not be loaded with num_workers=0: {base.reason or 'too few batches'}")
    for t in trials[1:]:
        if t.status == "ok" and len(t.batch_s) >= 3:
            t.vs_default = speedup(base.batch_s, t.batch_s)
    faster = [t for t in trials[1:] if t.vs_default is not None and t.vs_default.ci95[0] > 1.0]
    if not faster:
        verdict = "keep the defaults: no setting was faster than num_workers=0 beyond noise"
        return LoaderChoice(dict(DEFAULTS), None, trials, verdict, notes)
    best = max(faster, key=lambda t: t.vs_default.median)  # type: ignore[union-attr]
    simpler = [t for t in faster if t.kwargs.get("num_workers", 0) < best.kwargs.get("num_workers", 0)
               and speedup(t.batch_s, best.batch_s).ci95[0] <= 1.0]
    if simpler:
        best = min(simpler, key=lambda t: t.kwargs.get("num_workers", 0))  # as fast within noise, fewer workers
    r = best.vs_default
    verdict = (f"use DataLoader(..., {', '.join(f'{k}={v!r}' for k, v in best.kwargs.items())}): "
               f"{r.median:.2f}x [{r.ci95[0]:.2f}-{r.ci95[1]:.2f}] batches/s vs num_workers=0")  # type: ignore[union-attr]
    return LoaderChoice(dict(best.kwargs), r, trials, verdict, notes)


def _pickle_problem(dataset: Any, collate_fn: Any) -> str:
    try:
        pickle.dumps((dataset, collate_fn))
        return ""
    except Exception as exc:
        return last_line(exc)


def _trial(t: Trial, dataset: Dataset, collate_fn: Any, s: LoaderSettings) -> None:
    """One pass of up to ``s.batches_per_trial`` batches with ``t``'s settings (the loader is kept
    between rounds, so persistent workers stay up); failures mark the trial failed with the first
    line of the error."""
    n = s.batches_per_trial
    try:
        if t.loader is None:
            kwargs = dict(t.kwargs)
            if kwargs.get("num_workers", 0) and s.multiprocessing_context:
                kwargs["multiprocessing_context"] = s.multiprocessing_context
            t.loader = DataLoader(dataset, batch_size=s.batch_size, collate_fn=collate_fn, shuffle=s.shuffle,
                                  **kwargs)
        start = time.perf_counter()
        it = iter(t.loader)
        last = start
        for i in range(n):
            try:
                next(it)
            except StopIteration:
                break
            now = time.perf_counter()
            if i == 0:
                t.first_s.append(now - start)
            else:
                t.batch_s.append(now - last)
            last = now
        if getattr(t.loader, "persistent_workers", False):
            t.iterator = it  # the workers stay up for the next round
        else:
            _shutdown(it)  # non-persistent workers go now, as at the end of an epoch
    except Exception as exc:
        t.status, t.reason = "failed", last_line(exc)
        _close(t)


def _shutdown(it: Any) -> None:
    if it is not None and hasattr(it, "_shutdown_workers"):
        it._shutdown_workers()


def _close(t: Trial) -> None:
    """Stop the trial's workers and drop its loader."""
    _shutdown(t.iterator)
    t.iterator = None
    t.loader = None
