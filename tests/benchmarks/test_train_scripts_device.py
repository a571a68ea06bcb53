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


def test_the_gpu_blocks_add_arguments_and_name_the_scripts_own_mixed_precision() -> None:
    scripts = json.loads((ROOT / "benchmarks" / "scripts_corpus.json").read_text())["scripts"]
    gpu = [e for e in scripts if e.get("cuda")]
    assert [e["name"] for e in gpu] == ["nanogpt"]
    for e in gpu:
        assert any(a.startswith("--device=cuda") for a in e["cuda"]["args"])
        assert e["cuda"]["hand_args"] and all(isinstance(a, str) for a in e["cuda"]["hand_args"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the option would run")
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_scripts.py"), "--device", "cuda"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout.strip() == "--device cuda: no CUDA device here", proc.stdout
