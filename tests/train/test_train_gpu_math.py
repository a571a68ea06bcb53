"""fp32 speed and compile modes on a GPU as script edits (issue 45): TF32, cudnn.benchmark,
compile with max-autotune-no-cudagraphs and reduce-overhead, each an edit of the script's own
lines (or its Trainer's flag), named as the JSON names them, and skipped on a CPU with the reason.
The edits are tested on source text here; ``pytest -m gpu`` runs the patched script on CUDA."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
import torch

from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.script import edits
from pitstop.train.variants import TrainTarget, gate
from tests.fixtures.train_names import parse_train_variant
from tests.train.test_train_script import _discover, final_loss, repo, run

SCRIPT = "import torch\nfrom torch import nn\n\nmodel = build()\nfor x, y in data:\n    loss = model(x).sum()\n"
TF32 = TrainConfig(tf32=True)
BENCH = TrainConfig(cudnn_benchmark=True)
AUTOTUNE = TrainConfig(compile="max-autotune")
GRAPHS = TrainConfig(compile="reduce-overhead")


def plain(tmp_path, config):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    model = {"file": str(script), "line": 6, "expression": "model", "first_line": 1, "function": "<module>"}
    text = edits.apply(edits.plan(config, {"script": str(script), "trainers": [], "sites": {"model": model}},
                                  "cuda"))[str(script)]
    ast.parse(text)
    return text


def test_the_names_the_json_uses_round_trip():
    for name in ("tf32", "cudnn-benchmark", "compile-max-autotune", "compile-reduce-overhead", "fp16-autocast",
                 "bf16-autocast+tf32+cudnn-benchmark"):
        assert parse_train_variant(name).name == name
    assert TrainConfig(tf32=True, cudnn_benchmark=True).axes_set == ["tf32", "cudnn_benchmark"]


def test_a_plain_loop_gets_the_precision_api_the_benchmark_flag_and_the_compile_mode(tmp_path):
    text = plain(tmp_path, TF32.with_(cudnn_benchmark=True))
    head = [line.split("  #")[0] for line in text.splitlines()[2:5]]  # after the imports, before the script's code
    assert sorted(head) == ['torch.backends.cuda.matmul.fp32_precision = "tf32"',
                            "torch.backends.cudnn.benchmark = True",
                            'torch.backends.cudnn.conv.fp32_precision = "tf32"']
    assert 'model.compile(mode="max-autotune-no-cudagraphs")\nfor x, y in data:' in plain(tmp_path, AUTOTUNE)
    assert 'model.compile(mode="reduce-overhead")\nfor x, y in data:' in plain(tmp_path, GRAPHS)
    assert "model.compile()\nfor x, y in data:" in plain(tmp_path, NAIVE.with_(compile="default"))


@pytest.mark.parametrize(("kind", "made", "config", "flags"), [
    ("hf-arguments", "TrainingArguments", TF32, ["tf32=True"]),
    ("hf-arguments", "TrainingArguments", AUTOTUNE,
     ["torch_compile=True", 'torch_compile_mode="max-autotune-no-cudagraphs"']),
    ("lightning", "Trainer", BENCH, ["benchmark=True"]),
])
def test_a_trainer_gets_its_own_flag(tmp_path, kind, made, config, flags):
    script = tmp_path / "t.py"
    script.write_text(f"t = {made}(max_steps=10)\n")
    trainers = [{"kind": kind, "class": made, "site": {"file": str(script), "line": 1}, "keywords": []}]
    text = edits.apply(edits.plan(config, {"script": str(script), "trainers": trainers, "sites": {}}, "cuda"))
    assert f"{made}(max_steps=10, {', '.join(flags)})" in text[str(script)]


@pytest.mark.parametrize(("config", "why"), [
    (TF32, "TF32 is a CUDA tensor-core format"), (BENCH, "cudnn.benchmark chooses cuDNN's convolution"),
    (AUTOTUNE, "on a CPU it tunes for minutes"), (GRAPHS, "reduce-overhead uses CUDA graphs; it needs CUDA"),
])
def test_on_a_cpu_each_is_skipped_with_its_reason(config, why):
    assert why in gate(config, TrainTarget(device="cpu", compiler=True))
    assert gate(config, TrainTarget(device="cuda", has_4d_input=True)) is None


def test_cudnn_benchmark_needs_convolutions_to_choose_for():
    assert "no image-shaped (4-D) input" in gate(BENCH, TrainTarget(device="cuda", has_4d_input=False))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_patched_script_runs_with_tf32_cudnn_benchmark_and_each_compile_mode(tmp_path):
    script = repo(tmp_path, "slow_loader_loop.py")
    group = _discover(script, "--device", "cuda", "--epochs", "1", "--samples", "160")
    try:
        patches = {c.name: edits.apply(group.changes(c))[str(script.resolve())]
                   for c in (TF32.with_(cudnn_benchmark=True), AUTOTUNE, GRAPHS)}
    finally:
        group.close()
    before = run(script.name, "--device", "cuda", "--epochs", "3", "--samples", "160", cwd=tmp_path, pitstop=False)
    for name, text in patches.items():
        copy = tmp_path / f"{name}.py"
        copy.write_text(text)
        after = subprocess.run([sys.executable, copy.name, "--device", "cuda", "--epochs", "3", "--samples", "160"],
                               capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert after.returncode == 0, (name, after.stderr[-2000:])
        assert abs(final_loss(after.stdout) - final_loss(before.stdout)) < 0.1 * final_loss(before.stdout) + 0.05
