"""The base of the doctor's checks: a ``Consumer`` of the session's events plus the events the
doctor publishes, each a no-op until a check overrides it (only overridden ones are called)."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from pitstop.doctor.findings import Findings
from pitstop.hooks.session import Consumer, Session, noop

_BOUND = ("session", "findings", "doctor")  # set by the doctor, not the check's own state


class Check(Consumer):
    """A framework-agnostic check: override the ``on_<event>`` methods it needs. ``self.session``
    gives steps, names, roots and optimizers; ``self.found(...)`` records a finding. A check keeps
    its own state and never writes another's: what one learns for others goes out as an event."""

    code = ""
    codes: tuple[str, ...] = ()  # every code it reports, when more than ``code``
    session: Session
    findings: Findings
    doctor: Any = None  # the Doctor it runs in (for checks written against the old API)

    @noop
    def on_loss(self, step: int, value: float, site: str) -> None:
        """A loss value of ``step`` was read (backward ran on it at ``site``)."""

    @noop
    def on_grad_norms(self, step: int, optimizer: torch.optim.Optimizer, params: list[torch.Tensor],
                      norms: list[float]) -> None:
        """The gradient norms of ``optimizer``'s parameters at ``step`` were read."""

    @noop
    def on_skipped(self, step: int) -> None:
        """``guard`` dropped the gradients of ``step`` (non-finite): the optimizer skipped it."""

    @noop
    def on_sync(self) -> None:
        """Device-side values were read: a good moment to read one's own."""

    @noop
    def on_evaluation(self, roots: list[str]) -> None:
        """These roots ran forwards with autograd off next to real training: evaluation."""

    def bind(self, session: Session, findings: Findings, doctor: Any = None) -> None:
        """Attach the check to the session and findings it reports into."""
        self.session, self.findings, self.doctor = session, findings, doctor

    def found(self, code: str, where: str, message: str, *, step: int | None = None, fix: str | None = None) -> None:
        """Record a finding (at the current step unless ``step`` is given)."""
        self.findings.found(code, where, message, step=step, fix=fix)

    def name_of(self, obj: nn.Module | torch.Tensor) -> str:
        return self.session.name_of(obj)

    def state_dict(self) -> dict[str, Any]:
        """A snapshot of the check's own state (containers copied; tensors and weak references
        kept as they are, so it resumes a check in the same process)."""
        return {k: copy.copy(v) for k, v in vars(self).items() if k not in _BOUND}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict()``; a key the check does not have is an error naming it."""
        own = _keys(type(self))
        for key, value in state.items():
            if own is not None and key not in own:
                raise ValueError(f"{type(self).__name__}.load_state_dict: unknown key {key!r}; "
                                 f"expected one of {sorted(own)}")
            setattr(self, key, copy.copy(value))


def _keys(cls: type) -> set[str] | None:
    """The state keys of a fresh ``cls()`` (None when it needs arguments)."""
    try:
        return {k for k in vars(cls()) if k not in _BOUND}
    except TypeError:
        return None
