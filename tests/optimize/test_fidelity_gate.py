"""optimize v2 end to end, in worker processes: int8 per layer type, the margin-aware fidelity gate
on more samples than the timing batch, and the user's own metric."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pitstop

QUANT_MODELS = str(Path(__file__).parent / "quant_models.py")
FAST = {"threads": 1, "replicas": 1, "time_budget_s": 10, "techniques": ("quant",)}
INT8 = "eval+inference_mode+int8-dynamic"
STRICT = {**FAST, "tolerance": 1e-6}  # int8 moves the outputs far more than this


def rows_by_variant(report):
    return {row.variant: row for _, row in report.candidates()}


def test_a_gru_model_gets_its_recurrent_layers_quantized():
    fast = pitstop.optimize(f"{QUANT_MODELS}:gru_classifier", **FAST)
    row = rows_by_variant(fast.report)[INT8]
    assert row.status in ("ok", "rejected"), row.reason
    assert row.details["quant_layers"] == {"Linear": "torch.ao.quantization.quantize_dynamic",
                                           "GRU": "torch.ao.quantization.quantize_dynamic"}
    assert row.fidelity["samples"] >= 128  # more than the timing batch of 8


def test_flips_between_near_tied_logits_do_not_reject():
    fast = pitstop.optimize(f"{QUANT_MODELS}:near_tie", **FAST)
    fid = rows_by_variant(fast.report)[INT8]
    assert fid.fidelity["agreement"] < 0.9 and fid.fidelity["agreement_margin"] == 1.0, fid.fidelity
    assert fid.status == "ok", fid.reason


def _load_quant_models():
    import importlib.util

    spec = importlib.util.spec_from_file_location("quant_models", QUANT_MODELS)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    return models


@pytest.fixture(scope="module")
def strict_mlp():
    """One search of the mlp under a strict tolerance, on the user's own fidelity batch: the default gate's
    rejection and the fidelity batch are both read from it."""
    model, x = _load_quant_models().mlp()  # seeded: the same weights as the spec QUANT_MODELS:mlp
    return pitstop.optimize(model, x, fidelity_inputs=torch.randn(64, 16), **STRICT)


def test_a_metric_admits_a_candidate_the_default_gate_rejects(strict_mlp):
    rejected = rows_by_variant(strict_mlp.report)[INT8]
    assert rejected.status == "rejected" and "rel err" in rejected.reason
    fast = pitstop.optimize(f"{QUANT_MODELS}:mlp", metric=f"{QUANT_MODELS}:accuracy", metric_tolerance=0.02,
                            **STRICT)
    row = rows_by_variant(fast.report)[INT8]
    assert row.status == "ok" and "admitted by the metric" in row.note
    assert row.fidelity["metric_reference"] == 1.0 and row.fidelity["metric"] >= 0.98


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pitstop", "optimize", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_a_missing_metric_file_is_a_one_line_error():
    done = run_cli(f"{QUANT_MODELS}:mlp", "--metric", "no_such_metric.py:accuracy")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "pitstop: error: --metric: file 'no_such_metric.py' not found; give an existing file.py:function"]
    missing_fn = run_cli(f"{QUANT_MODELS}:mlp", "--metric", f"{QUANT_MODELS}:no_such_fn")
    assert missing_fn.returncode == 2 and "has no function 'no_such_fn'" in missing_fn.stderr
    assert len(missing_fn.stderr.strip().splitlines()) == 1


def test_the_help_example_with_a_metric_runs(tmp_path):
    (tmp_path / "my_model.py").write_text(
        "from torch import nn\n\n\ndef build():\n"
        "    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))\n")
    (tmp_path / "my_metric.py").write_text(
        "import torch\n\n\ndef accuracy(model):\n"
        "    x = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))\n"
        "    return float((model(x).argmax(-1) >= 0).float().mean())\n")
    done = run_cli("my_model.py:build", "--input", "float32[B,64]", "--metric", "my_metric.py:accuracy",
                   "--threads", "1", "--replicas", "1", "--time-budget-s", "10", "--techniques", "quant",
                   "--json", "out.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    rows = {r["variant"]: r for r in json.loads((tmp_path / "out.json").read_text())["results"]}
    assert rows[INT8]["fidelity"]["metric"] == 1.0 and rows[INT8]["status"] == "ok"


def test_fidelity_runs_on_the_users_own_batch(strict_mlp):
    row = rows_by_variant(strict_mlp.report)[INT8]
    assert row.fidelity["samples"] == 8 + 64  # the timing batch, then the user's 64 rows
    assert strict_mlp.report.settings["fidelity_inputs"] == "float32[64,16]"
