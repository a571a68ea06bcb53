"""The global random generators a Dataset's ``__getitem__`` may draw from (torch's CPU generator,
Python's, numpy's): their states read, compared and put back."""

from __future__ import annotations

import sys
from typing import Any

import torch


def rng_states() -> tuple[Any, ...]:
    """The global generators a ``__getitem__`` draws from: torch's (CPU), Python's, numpy's."""
    import random

    np = sys.modules.get("numpy")
    state = np.random.get_state() if np is not None else None
    return (bytes(torch.random.get_rng_state().numpy()), random.getstate(),
            (state[0], bytes(state[1].tobytes()), *state[2:]) if state is not None else None)


def set_rng_states(states: tuple[Any, ...]) -> None:
    """Put back what ``rng_states`` read."""
    import random

    torch_state, python_state, np_state = states
    torch.random.set_rng_state(torch.frombuffer(bytearray(torch_state), dtype=torch.uint8))
    random.setstate(python_state)
    np = sys.modules.get("numpy")
    if np is not None and np_state is not None:
        import numpy

        np.random.set_state((np_state[0], numpy.frombuffer(np_state[1], dtype=numpy.uint32).copy(), *np_state[2:]))
