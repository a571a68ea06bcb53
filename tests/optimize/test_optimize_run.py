"""Real optimize searches on small models in worker processes: the candidates run, are gated,
rejected or failed for real, and the recipe re-loads without pitstop."""

import json
import subprocess
import sys

import jsonschema
import pytest
import torch

import pitstop
from pitstop.bench.fidelity import compare, detached
from pitstop.schemas import BENCH_SCHEMA
from tests.fixtures.models import Cancelling

FAST = {"threads": 1, "replicas": 1, "time_budget_s": 10}  # the product's minimum: every stage still runs


def rows_by_variant(report):
    return {row.variant: row for _, row in report.candidates()}


@pytest.fixture(scope="module")
def lossy():
    """One search of the deliberately lossy model, read by the gate test and the OptimizedModel test."""
    model, x = Cancelling(), torch.randn(4, 16)
    return model, x, pitstop.optimize(model, x, techniques=("precision",), **FAST)


def test_lossy_candidates_are_rejected_with_the_measured_error(lossy):
    model, x, fast = lossy
    rows = rows_by_variant(fast.report)
    for name in ("eval+inference_mode+bf16-autocast", "eval+inference_mode+bf16-weights"):
        if rows[name].status == "skipped":  # a CPU without native bf16: the gate says so
            assert "no native bf16" in rows[name].reason
            continue
        assert rows[name].status == "rejected", rows[name]
        assert "rel err" in rows[name].reason and rows[name].fidelity["rel_err"] > 2e-2
    assert rows["eval+inference_mode+fp16-autocast"].status == "skipped"
    assert fast.report.outcome.winner is None or fast.config.precision == "fp32"
    assert torch.allclose(fast(x), model.eval()(x), atol=1e-6)  # the start point: same answers
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the user's module is untouched


def test_a_candidate_that_cannot_be_exported_fails_and_the_search_goes_on(models_py):
    fast = pitstop.optimize(f"{models_py}:unexportable", techniques=("runtime", "threads"), **FAST)
    rows = rows_by_variant(fast.report)
    ort = rows["eval+inference_mode+onnxruntime"]
    assert ort.status == "failed" and "prepare raised" in ort.reason and "linalg_svdvals" in ort.reason
    assert rows["eval+inference_mode"].status == "ok" and rows["eval+inference_mode"].samples_s
    assert fast.report.outcome.complete


def test_search_saves_a_recipe_that_rebuilds_the_model_without_pitstop(models_py, tmp_path):
    out, save = tmp_path / "opt.json", tmp_path / "recipe"
    fast = pitstop.optimize(f"{models_py}:tiny_conv", batch_sizes=[2, 4], objective="throughput",
                            techniques=("layout", "runtime", "precision"), save=save, json_path=str(out), **FAST)
    report = fast.report
    assert {s.name for s in report.stages} >= {"probe", "sweep"}
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, BENCH_SCHEMA)
    assert doc["kind"] == "optimize" and doc["baseline"] == "eval+inference_mode"
    assert doc["winner"]["variant"] == fast.config.name and doc["winner"]["recipe"] == fast.recipe
    assert {r["stage"] for r in doc["results"]} >= {"probe", "sweep"}
    assert doc["choice"]["batch_size"] in (2, 4)
    files = {p.name for p in save.iterdir()}
    assert files >= {"recipe.json", "recipe.py"}
    assert ("model.onnx" in files) == (fast.config.runtime == "onnxruntime")
    assert json.loads((save / "recipe.json").read_text())["winner"]["variant"] == fast.config.name
    # the recipe, run in a fresh interpreter where pitstop cannot be imported
    script = ("import sys; sys.modules['pitstop'] = None\n"
              "import importlib.util, torch\n"
              f"spec = importlib.util.spec_from_file_location('recipe', {str(save / 'recipe.py')!r})\n"
              "recipe = importlib.util.module_from_spec(spec); spec.loader.exec_module(recipe)\n"
              "torch.manual_seed(0); model = recipe.build(); x = recipe.example_inputs()\n"
              "torch.save({'state': model.state_dict(), 'x': x, 'y': recipe.apply(model, x)(*x)}, sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "out.pt")], check=True, timeout=120)
    got = torch.load(tmp_path / "out.pt")
    from tests.fixtures.models import TinyConv

    reference = TinyConv()
    reference.load_state_dict(got["state"])
    expected = detached(reference.eval()(*got["x"]))
    fid = compare(detached(got["y"]), expected)
    assert fid["rel_err"] <= (2e-2 if fast.config.precision != "fp32" else 1e-4)
    y = fast(torch.randn(2, 3, 16, 16))  # the OptimizedModel works on new inputs
    assert tuple(y.shape) == (2, 5)


def test_optimized_model_is_an_nn_module_with_report_and_recipe(lossy):
    model, x, fast = lossy
    assert isinstance(fast, torch.nn.Module) and isinstance(fast, pitstop.OptimizedModel)
    assert "def apply(model" in fast.recipe and "Winner" in str(fast.report)
    assert torch.allclose(fast(x), model.eval()(x), atol=1e-6)


def test_bad_input_is_a_usage_error(models_py):
    with pytest.raises(pitstop.PitstopError, match=r"^objective: must be latency or throughput, got 'speed'$"):
        pitstop.optimize(f"{models_py}:tiny", "float32[B,16]", objective="speed")
