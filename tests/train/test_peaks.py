"""MFU against the matmul peak measured here (issue 25, item 5)."""

from __future__ import annotations

import torch

from pitstop.train.peaks import matmul_peak, mfu


def test_the_peak_is_the_best_matmul_over_a_window():
    """Several repeats over at least the window: a real matmul rate on this machine."""
    peak = matmul_peak(torch.float32, sizes=(256,), repeats=2, window_s=0.05)
    flops_one = 2.0 * 256**3
    assert 1e6 < peak and flops_one / peak < 0.05  # one matmul took less than the window


def test_a_step_faster_than_the_measured_peak_gets_no_mfu():
    """A step whose FLOP/s exceed the measured peak means the peak was measured low (a busy moment):
    no fraction above 100% is printed, and the document says why."""
    peak = matmul_peak(torch.float32, sizes=(256,), repeats=2, window_s=0.05)
    flops = 1e9
    below = mfu(flops, flops / (0.5 * peak), "fp32", {"fp32": peak})
    assert below is not None and abs(below["fraction"] - 0.5) < 1e-9
    above = mfu(flops, flops / (1.5 * peak), "bf16-autocast", {"fp32": peak, "bf16": peak})
    assert above is not None and above["fraction"] is None and "measured low" in above["note"]
    assert above["precision"] == "bf16"
