"""Issue 18 items 2, 4 and 10: a model.onnx left in the directory is reused only for the same model
and inputs; a failed start point recommends and saves nothing; user strings in a recipe are quoted
with repr and the recipe is parsed before it is run or written."""

import ast
import importlib.util
import json
import shutil

import pytest
import torch
from reliability_helpers import F

from pitstop.bench.result import BenchResult
from pitstop.bench.variants.config import parse_variant
from pitstop.bench.variants.handlers import Target, build
from pitstop.engine.measurement import Measurement
from pitstop.engine.source import make_source
from pitstop.optimize.recipe import full_recipe
from pitstop.optimize.search import START, Search, Stage
from pitstop.optimize.settings import OptimizeSettings

ORT = pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="needs pitstop[onnx]")
HOSTILE = 'ev"""il\\dir'  # a directory name with a triple quote and a backslash


def _recipe(spec: str, variant: str = "eval+inference_mode") -> str:
    source = make_source(spec, "float32[B,8]", 0)
    target = Target.detect("cpu", torch.nn.Linear(1, 1), [2])
    return full_recipe(parse_variant(variant), target, 1, source, 2, f"pitstop recipe for {source.name}: x")


def test_a_hostile_path_is_quoted_not_injected(tmp_path, monkeypatch):
    folder = tmp_path / HOSTILE
    folder.mkdir()
    shutil.copy(F, folder / "m.py")
    monkeypatch.chdir(tmp_path)
    text = _recipe(f"{HOSTILE}/m.py:build")
    tree = ast.parse(text)  # it parses...
    assert ast.get_docstring(tree).startswith(f"pitstop recipe for {HOSTILE}/m.py:build")  # ...and says it as written
    namespace = build(text, tmp_path / "recipe.py")
    out = namespace["apply"](namespace["build"](), namespace["example_inputs"]())(*namespace["example_inputs"]())
    assert out.shape == (2, 4)


def test_an_injection_attempt_stays_a_string(tmp_path, monkeypatch):
    evil = 'x"""\nimport os; os._exit(3)\n"""'
    folder = tmp_path / evil
    folder.mkdir()
    shutil.copy(F, folder / "m.py")
    monkeypatch.chdir(tmp_path)
    namespace = build(_recipe(f"{evil}/m.py:build"), tmp_path / "recipe.py")  # runs: nothing injected
    assert "import os; os._exit(3)" in namespace["__doc__"]


@ORT
def test_the_onnx_fingerprint_tells_models_apart(tmp_path):
    namespace = build(_recipe(f"{F}:build", "eval+inference_mode+onnxruntime"), tmp_path / "recipe.py")
    example, model = namespace["example_inputs"](), namespace["build"]()
    same = namespace["fingerprint"](model, example, {})
    assert same == namespace["fingerprint"](namespace["build"](), example, {})  # reused for the same model
    other = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    assert namespace["fingerprint"](other, example, {}) != same  # other weights: re-exported
    assert namespace["fingerprint"](model, (torch.randn(3, 8),), {}) != same  # other input signature


@ORT
def test_a_stale_model_onnx_is_not_served(tmp_path):
    namespace = build(_recipe(f"{F}:build", "eval+inference_mode+onnxruntime"), tmp_path / "recipe.py")
    example = namespace["example_inputs"]()
    namespace["apply"](namespace["build"](), example)  # the measured model's graph lands in tmp_path
    other = torch.nn.Sequential(torch.nn.Linear(8, 3))  # another model, another output shape
    served = namespace["apply"](other, example)
    assert served(*example).shape == (2, 3)
    torch.testing.assert_close(served(*example), other(*example), rtol=1e-4, atol=1e-5)


def test_a_failed_start_point_recommends_nothing(tmp_path):
    source = make_source(f"{F}:build", "float32[B,8]", 0)
    settings = OptimizeSettings(batch_size=2, threads=1, time_budget_s=10)
    search = Search(source, settings, {})
    try:
        rows = [Measurement(START.name, START.to_dict(1), 2, "failed", "worker was killed by SIGKILL",
                            variant_config=START)]
        fast = parse_variant("eval+inference_mode+bf16-autocast")
        rows.append(Measurement(fast.name, fast.to_dict(1), 2, "ok", None, variant_config=fast))
        result = BenchResult(model=source.name, inputs={}, settings={}, environment={}, baseline=START.name)
        result.rows.extend(rows)
        search.outcome.stages.append(Stage("final", result))
        search._decide()
    finally:
        search.group.close()
    outcome = search.outcome
    assert outcome.winner is None and "start point eval+inference_mode failed in the final stage" in outcome.failed
    assert "no recipe is written" in outcome.verdict


def test_an_optimize_recipe_warns_loudly_when_the_model_file_changed(tmp_path):
    """Issue 26: a recipe carries the fingerprint of the model file it was measured on (taken when
    the run started); run after that file changed, it says so on stderr, and still runs."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    model = tmp_path / "m.py"
    shutil.copy(F, model)
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run([sys.executable, "-m", "pitstop", "optimize", f"{model}:build", "--input", "float32[B,8]",
                           "--techniques", "threads", "--time-budget-s", "10", "--replicas", "1", "--save", "s"],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": src},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((tmp_path / "s" / "recipe.json").read_text())
    assert saved["environment"]["model_fingerprint"]["path"] == str(model.resolve())
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    same = subprocess.run([sys.executable, "s/recipe.py"], capture_output=True, text=True, cwd=tmp_path, env=clean)
    assert same.returncode == 0, same.stderr
    assert "changed since pitstop measured" not in same.stderr
    model.write_text(model.read_text() + "\n# edited\n")
    changed = subprocess.run([sys.executable, "s/recipe.py"], capture_output=True, text=True, cwd=tmp_path,
                             env=clean)
    assert changed.returncode == 0 and "m.py changed since pitstop measured this recipe" in changed.stderr
