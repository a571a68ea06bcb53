"""benchmarks/train_scripts.py --device cuda: the manifest's GPU blocks are well formed, and without
a GPU the option says so in one line and exits 2 (it ran on an H200: docs/how-it-measures.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_blocks_cover_issue_45s_three_roles_and_assemble_their_command_lines() -> None:
    """The GPU manifest (benchmarks/gpu.sh runs each entry): an fp32 compute-bound script with its own
    bf16 option as the hand reference, the fp16 + GradScaler path forced on a script that clips, an
    input-bound script whose CPU-only flag is dropped; every technique list is one pitstop accepts."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import train_scripts
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from pitstop.train.settings import TrainSettings

    scripts = json.loads((ROOT / "benchmarks" / "scripts_corpus.json").read_text())["scripts"]
    gpu = {e["name"]: e for e in train_scripts.cuda_entries(scripts)}
    assert list(gpu) == ["nanogpt", "word_lm_transformer", "gcommands_mfsc_lenet"]
    assert all(e["cuda"]["role"] for e in gpu.values())
    nano, lm, audio = gpu.values()
    assert nano["args"][-8] == "--device=cuda" and "--device=cpu" in nano["args"]  # the configurator's last wins
    assert nano["hand_args"] == ["--dtype=bfloat16"]
    assert "--accel" in lm["args"] and lm["hand_args"] is None and "precision=fp16-autocast" in lm["techniques"]
    assert "--no-cuda" not in audio["args"] and "--no-cuda" in audio["cuda"]["drop_args"] and audio["input_bound"]
    assert "workers" in audio["techniques"]
    for e in gpu.values():  # a technique list the search would refuse would waste the lease
        TrainSettings(batch_size=8, threads=2, techniques=tuple(e["techniques"].split(",")))
    script = (ROOT / "benchmarks" / "gpu.sh").read_text()
    assert all(f"--only {name} " in script for name in gpu), "gpu.sh runs each GPU entry"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the option would run")
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_scripts.py"), "--device", "cuda"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout.strip() == "--device cuda: no CUDA device here", proc.stdout
