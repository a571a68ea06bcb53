"""``pitstop data`` with the user's dataset in a child process of its own: a dataset that exits
(``os._exit``, a segfault, an out-of-memory kill) or hangs ends the run with a one-line error
naming what it was doing, within a time limit, instead of killing or blocking the command.

The child builds the dataset from its spec (``file.py:factory``), runs ``tune_loader`` and sends
back progress lines and the ``LoaderChoice``; the parent only waits, with a deadline."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from collections.abc import Callable
from typing import Any

from pitstop.data.tuning import LoaderChoice, LoaderSettings, tune_loader
from pitstop.errors import ModelLoadError, PitstopError, UsageError, last_line


def limit_s(settings: LoaderSettings) -> float:
    """How long the child may take: two rounds run even past the budget, and workers start slowly."""
    return 2 * settings.time_budget_s + 30.0


def tune_isolated(spec: str, settings: LoaderSettings, on_event: Callable[[str], None] | None = None,
                  timeout_s: float | None = None) -> LoaderChoice:
    """``tune_loader`` on the dataset ``spec`` names, in a child process; a dataset that dies or
    takes longer than ``timeout_s`` (default ``limit_s(settings)``) is a ``UsageError``."""
    if settings.multiprocessing_context is None:  # the loader's workers start as they would in-process
        settings = dataclasses.replace(settings, multiprocessing_context=multiprocessing.get_all_start_methods()[0])
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of ours is forked
    receiver, sender = context.Pipe(duplex=False)
    proc = context.Process(target=_child, args=(spec, settings, sender), name="pitstop-data")
    proc.start()
    sender.close()
    limit = limit_s(settings) if timeout_s is None else timeout_s
    deadline, doing = time.monotonic() + limit, "loading the dataset"
    try:
        while True:
            if receiver.poll(0.1):
                try:
                    kind, value = receiver.recv()
                except (EOFError, OSError):
                    proc.join(5)
                    raise UsageError(_died(spec, proc.exitcode, doing)) from None
                if kind == "event":
                    doing = value
                    if on_event:
                        on_event(value)
                    continue
                return _answer(kind, value)
            if not proc.is_alive():
                raise UsageError(_died(spec, proc.exitcode, doing))
            if time.monotonic() > deadline:
                raise UsageError(f"dataset {spec}: no result after {limit:.0f} s (stuck in {doing}); it hangs: "
                                 "fix the dataset (pitstop data allows twice its time budget plus 30 s)")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        receiver.close()


def _answer(kind: str, value: Any) -> LoaderChoice:
    if kind == "ok":
        return value
    if kind == "error":
        raise UsageError(value)
    raise RuntimeError(value)  # a bug in pitstop: the CLI's one-line internal error


def _died(spec: str, code: int | None, doing: str) -> str:
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    return f"dataset {spec}: its process {how} during {doing}; the dataset must not exit or crash"


def _child(spec: str, settings: LoaderSettings, conn: Any) -> None:
    """In the child: build the dataset, tune, send ``("ok", choice)`` or ``("error", message)``."""
    try:
        dataset, collate = _load(spec)
        choice = tune_loader(dataset, collate_fn=collate, settings=settings,
                             on_event=lambda text: conn.send(("event", text)))
        conn.send(("ok", choice))
    except PitstopError as exc:
        conn.send(("error", str(exc)))
    except Exception as exc:
        conn.send(("bug", last_line(exc)))
    finally:
        conn.close()


def _load(spec: str) -> tuple[Any, Any]:
    from pitstop.models.spec import parse_model_spec

    try:
        factory = parse_model_spec(spec).resolve()
    except PitstopError as exc:
        message = str(exc)
        message = "dataset " + message[len("model "):] if message.startswith("model ") else message
        raise type(exc)(message.replace("a factory:", "a dataset name:")) from None
    try:
        made = factory()
    except Exception as exc:
        raise ModelLoadError(f"dataset {spec}: the factory raised {last_line(exc)}") from exc
    dataset, collate = made if isinstance(made, tuple) else (made, None)
    if not hasattr(dataset, "__getitem__") and not hasattr(dataset, "__iter__"):
        raise UsageError(f"dataset {spec}: the factory returned {type(dataset).__name__}, not a Dataset")
    return dataset, collate
