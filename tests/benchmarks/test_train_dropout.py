"""benchmarks/train_dropout.py: the fp32 and bf16 steps with and without dropout, side by side, with
the mask's share of the CPU time and the top operators, for zoo:transformer and for the model of
Lightning's transformer example (the one script whose bf16 patch stays under 1.3x here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_lightning_models_step_is_measured_with_its_masks_share():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_dropout.py"), "--model", "lightning",
                           "--vocab", "64", "--batch", "2", "--rounds", "1"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split(" | ") for line in proc.stdout.splitlines() if line.startswith(("| fp32", "| bf16"))]
    assert [r[0] for r in rows] == [f"| {p} dropout {d}" for d in ("0.2", "0.0") for p in ("fp32", "bf16")]
    masks = [float(r[3].rstrip("%")) for r in rows]
    assert masks[0] > 0 and masks[1] > 0 and masks[2] == masks[3] == 0  # no dropout, no mask drawn
    assert rows[1][2].endswith("]") and "x [" in rows[1][2]  # a speed-up with its interval
    assert "vocabulary 64" in proc.stdout and "load average" in proc.stdout
