"""``pitstop train`` on models with real code's conventions (issue 25 item 3): keyword inputs and
the model's own loss, nanoGPT's ``(logits, loss)`` and parameter groups, a loss function defined in
the model file (the saved recipe runs with pitstop not importable), sequence-first batches, and a
model with no loss and no target (a one-line error, never the mean of the logits)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pitstop
from pitstop.errors import UsageError

MODELS = str(Path(__file__).with_name("problem_models.py"))
SRC = str(Path(__file__).resolve().parents[2] / "src")
QUICK = {"time_budget_s": 10, "techniques": ("zero_grad",), "replicas": 1}
INLINE = {**QUICK, "isolate": False}  # what the problem's inspection and the recipe make of the model: no worker
# processes needed (real workers on a model file: test_a_recipe_with_a_loss_from_the_model_file_runs_without_pitstop)


def test_keyword_inputs_and_the_models_own_loss():
    setup = pitstop.train(f"{MODELS}:keyword_lm", **INLINE)
    problem = setup.report.problem
    assert problem["loss"]["kind"] == "own" and problem["loss"]["code"] == "output.loss"
    assert problem["inputs"] == "input_ids=int64[8,16];labels=int64[8,16]"
    from problem_models import keyword_lm

    model, inputs = keyword_lm()
    _, _, step = setup.apply(model)
    losses = [float(step(inputs)) for _ in range(20)]
    assert losses[-1] < losses[0]


def test_a_tuple_with_the_loss_and_parameter_groups_are_reproduced():
    setup = pitstop.train(f"{MODELS}:tuple_lm", **INLINE)
    problem = setup.report.problem
    assert problem["loss"]["code"] == "output[1]"
    groups = problem["optimizer"]["groups"]
    assert [g["options"].get("weight_decay", 0.1) for g in groups] == [0.1, 0.0]
    assert problem["optimizer"]["options"]["betas"] == [0.9, 0.95] or problem["optimizer"]["options"]["betas"] == (
        0.9, 0.95)
    from problem_models import TupleLM

    model, optimizer, _ = setup.apply(TupleLM())
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]
    assert sum(len(g["params"]) for g in optimizer.param_groups) == len(list(model.parameters()))


def test_a_recipe_with_a_loss_from_the_model_file_runs_without_pitstop(tmp_path):
    out = tmp_path / "saved"
    proc = subprocess.run([sys.executable, "-m", "pitstop", "train", f"{MODELS}:classifier_with_own_loss_fn",
                           "--time-budget-s", "10", "--techniques", "zero_grad", "--replicas", "1", "--save", str(out)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    recipe = (out / "recipe.py").read_text()
    assert "_pitstop_user" not in recipe and "'smooth_loss'" in recipe and "def example_batch" in recipe
    blocked = ("import runpy, sys\nsys.modules['pitstop'] = None  # pitstop cannot be imported\n"
               f"runpy.run_path({str(out / 'recipe.py')!r}, run_name='__main__')\n")
    run = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "after 30 steps" in run.stdout


def test_sequence_first_batches_split_along_their_batch_dimension():
    from problem_models import SeqFirst, seq_loss

    x = torch.randint(0, 30, (12, 8))  # (time, batch)
    target = torch.randint(0, 5, (12, 8))  # (time, batch)
    setup = pitstop.train(SeqFirst(), (x,), target, loss_fn=seq_loss, batch_dim=1, time_budget_s=10,
                          techniques=("micro_batch",), replicas=1, isolate=False)
    assert setup.report.settings["batch_size"] == 8
    assert "BATCH_DIM = 1" in setup.recipe
    micro = [r for r in setup.report.to_dict()["results"] if r["variant"].startswith("micro")]
    assert micro and all(r["status"] != "failed" for r in micro), micro


def test_batch_dim_mismatch_is_one_line():
    from problem_models import SeqFirst, seq_loss

    with pytest.raises(UsageError, match="target: its batch dimension 1 must be the batch size 8"):
        pitstop.train(SeqFirst(), (torch.randint(0, 30, (12, 8)),), torch.zeros(12, 7, dtype=torch.long),
                      loss_fn=seq_loss, batch_dim=1, isolate=False, **QUICK)


@pytest.mark.parametrize("spec", [f"{MODELS}:logits_only", "zoo:mlp"])
def test_no_target_and_no_loss_is_an_error_not_the_mean_of_the_logits(spec):
    with pytest.raises(UsageError, match="is not a scalar loss and carries none"):
        pitstop.train(spec, "float32[B,8]" if "logits" in spec else None, batch_size=4, **QUICK)
