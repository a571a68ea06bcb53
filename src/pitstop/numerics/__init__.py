"""Numerically stable autograd Functions (``functions.py``), and a gradient check that says where it
fails (``gradcheck.py``).

    y = pitstop.numerics.logsumexp(x, dim=-1)
    q = pitstop.numerics.straight_through_round(x, bits=8)
    res = pitstop.numerics.verify_gradients(fn, x, w)     # res.ok, res.details
"""

from __future__ import annotations

from pitstop.numerics.functions import LogSumExp as LogSumExp
from pitstop.numerics.functions import StraightThroughRound as StraightThroughRound
from pitstop.numerics.functions import logsumexp, straight_through_round
from pitstop.numerics.gradcheck import GradientCheck, InputCheck, verify_gradients

__all__ = ["GradientCheck", "InputCheck", "logsumexp", "straight_through_round", "verify_gradients"]
