"""pitstop's exceptions. Every error a user can cause is a ``PitstopError``; the CLI prints
its message on one line and exits 2. Messages say what happened, the value seen, and what to do.

    PitstopError
     +-- UsageError           bad command-line or API arguments
     |    +-- SettingError    a settings object's field with a bad value (``field`` names it; the
     |         |              CLI, which knows the flag, says ``--budget-s: ...`` instead)
     |         +-- InputSpecError  a malformed input or target spec (``field``: input, target)
     +-- ModelSpecError       a model spec that cannot be resolved (file, attribute, zoo name)
     +-- ModelLoadError       a factory that raised or returned something that is not a module
     +-- ModelRunError        the model's first forward pass failed on the given inputs
     +-- MissingExtraError    an optional dependency is not installed (names the pip command)
     +-- ReferenceFailed      the fp32 reference itself fails or is not finite: nothing to compare
                              with, nothing recommended (exit 1)

A failure *inside one measured variant* is not an exception here: it becomes a result row with
``status="failed"`` and its reason, and the run goes on.
"""

from __future__ import annotations


class PitstopError(Exception):
    """Base class: a problem the user can fix; the message is one line."""

    exit_code = 2


class UsageError(PitstopError, ValueError):
    """Bad arguments to a command or an API function."""


class SettingError(UsageError):
    """A field of a settings object (``BenchSettings``, ``OptimizeSettings``, ...) with a bad value.

    The message starts with the field (``budget_s: must be positive, got -1``); the CLI, which knows
    which flag set the field, says ``--budget-s: must be positive, got -1`` instead."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


class InputSpecError(SettingError):
    """A malformed input spec such as ``float32[B,3,224,224]``; ``field`` is ``input`` or ``target``."""


class ModelSpecError(PitstopError):
    """A model spec (``zoo:NAME``, ``file.py:factory``, ``pkg.mod:factory``) that cannot be resolved."""


class ModelLoadError(PitstopError):
    """The factory raised, or returned something other than an ``nn.Module``."""


class ModelRunError(PitstopError):
    """The model's first forward pass failed on the example inputs."""


class MissingExtraError(PitstopError, ImportError):
    """An optional dependency is missing; the message names ``pip install "pitstop[extra]"``."""


class ReferenceFailed(PitstopError):
    """The reference (train's fp32 naive step, optimize's start point) fails or is not finite: no
    variant can be judged against it, so nothing is recommended or saved; exit 1."""

    exit_code = 1


def last_line(exc: BaseException) -> str:
    """``TypeName: message`` for an exception, cut to its last non-empty line."""
    text = str(exc).strip().splitlines()
    msg = text[-1].strip() if text else ""
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
