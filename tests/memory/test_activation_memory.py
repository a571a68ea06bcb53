"""Activation accounting, budget-driven checkpointing and the stable Functions, on small real models."""

import copy
import json
import subprocess
import sys

import pytest
import torch
from torch import nn

import pitstop
from pitstop.cli import main
from pitstop.errors import UsageError
from pitstop.memory import activation_report, checkpoint, uncheckpoint
from pitstop.numerics import logsumexp, straight_through_round, verify_gradients
from tests.fixtures.models import Stack, wrong_sin


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def test_activation_bytes_are_exact_attributed_and_deduplicated():
    model, x = mlp(), torch.randn(8, 16)
    report = activation_report(model, x, repeats=2)
    relu_out = 8 * 32 * 4  # the ReLU saves its output; the second Linear saves the same storage: counted once
    assert report.total_bytes == relu_out
    assert report.row("1").saved_bytes == relu_out and report.row("2").saved_bytes == 0
    assert report.input_saved_bytes == 8 * 16 * 4  # the first Linear saves the input: counted apart
    assert report.param_saved_bytes > 0  # weights saved for backward: counted apart too
    assert report.row("Sequential").subtree_bytes == relu_out
    assert all(report.row(n).forward_ms > 0 for n in ("0", "1", "2"))
    params = sum(p.numel() * 4 for p in model.parameters())
    assert report.peak_bytes >= relu_out + params  # activations and the new gradients, counted exactly
    assert report.peak_how == "exact accounting of CPU storages"
    doc = report.to_dict()
    assert doc["kind"] == "memory" and doc["modules"][0]["module"] == "Sequential"


def test_no_grad_saves_nothing_and_grows_with_batch():
    small = activation_report(Stack(dropout=0.0), torch.randn(2, 32, 16), repeats=1, peak=False).total_bytes
    large = activation_report(Stack(dropout=0.0), torch.randn(8, 32, 16), repeats=1, peak=False).total_bytes
    assert large == pytest.approx(4 * small, rel=0.01)


def test_checkpoint_meets_the_budget_keeps_loss_and_gradients_and_undoes():
    torch.manual_seed(0)
    model, x = Stack(dropout=0.1), torch.randn(8, 32, 16)
    plain = copy.deepcopy(model)
    keys = list(model.state_dict())
    plan = checkpoint(model, x, budget=0.5, repeats=2)
    assert plan.met and plan.chosen and all(n.startswith("blocks.") for n in plan.chosen)
    assert plan.after_bytes <= plan.budget_bytes < plan.before_bytes
    assert plan.before_ms > 0 and plan.after_ms > 0 and plan.slowdown is not None
    assert list(model.state_dict()) == keys  # names and state_dict unchanged
    losses = []
    for m in (model, plain):
        m.zero_grad()
        torch.manual_seed(1)  # the same dropout masks: checkpointing restores the RNG for the recompute
        loss = (m(x) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
    assert losses[0] == losses[1]
    for (name, p), q in zip(model.named_parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    uncheckpoint(model)
    assert not any("forward" in vars(m) for m in model.modules())


def test_checkpoint_says_when_the_budget_cannot_be_met_and_validates():
    model, x = Stack(dropout=0.0), torch.randn(4, 32, 16)
    plan = checkpoint(model, x, budget=1, repeats=1)
    assert not plan.met and "cannot be met" in plan.note
    assert "embed" in plan.chosen or "head" in plan.chosen  # last resorts, used when nothing else suffices
    with pytest.raises(UsageError, match="no submodule named 'nope'"):
        checkpoint(Stack(), x, candidates=["nope"])
    with pytest.raises(UsageError, match="budget"):
        checkpoint(Stack(), x, budget=1.5)
    only = checkpoint(Stack(dropout=0.0), x, budget=0.9, candidates=["blocks.2"], repeats=1)
    assert only.chosen == ["blocks.2"]


def test_logsumexp_matches_torch_and_is_stable_up_to_1e4_in_float32():
    x = torch.randn(5, 7)
    torch.testing.assert_close(logsumexp(x, dim=-1), torch.logsumexp(x, dim=-1))
    torch.testing.assert_close(logsumexp(x, dim=0, keepdim=True), torch.logsumexp(x, dim=0, keepdim=True))
    big = torch.tensor([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]], requires_grad=True)
    y = logsumexp(big, dim=-1)
    y.sum().backward()
    assert torch.isfinite(y).all() and torch.isfinite(big.grad).all()
    naive = torch.log(torch.exp(big.detach()).sum(-1))  # noqa: PIT602 (the unstable form, on purpose)
    assert not torch.isfinite(naive).all()  # what the Function avoids
    torch.testing.assert_close(big.grad.sum(-1), torch.ones(2), atol=1e-3, rtol=0)  # softmax rows: float32 at 1e4
    torch.testing.assert_close(y.double(), torch.logsumexp(big.detach().double(), -1), atol=1e-3, rtol=0)
    all_neg_inf = torch.full((1, 3), float("-inf"))
    assert logsumexp(all_neg_inf).item() == torch.logsumexp(all_neg_inf, -1).item() == float("-inf")


def test_straight_through_round_quantizes_and_passes_gradients():
    x = (torch.randn(1000) * 1e4).requires_grad_()
    q = straight_through_round(x, bits=8)
    assert q.unique().numel() <= 255 and torch.isfinite(q).all()
    scale = x.detach().abs().max() / 127
    assert (q - x).abs().max() <= scale / 2 + 1e-3
    q.sum().backward()
    assert torch.equal(x.grad, torch.ones(1000))
    with pytest.raises(ValueError):
        straight_through_round(x, bits=1)


def test_float64_gradcheck_of_both_functions_and_a_wrong_backward_is_caught():
    lse = verify_gradients(lambda t: logsumexp(t, dim=-1), torch.randn(3, 4))
    assert lse.ok and lse.gradcheck_ok and lse.gradgradcheck_ok
    # on a fine grid the straight-through identity gradient is the true derivative: gradcheck passes
    ste = verify_gradients(lambda t: straight_through_round(t, bits=40), torch.randn(3, 4))
    assert ste.ok
    # at 8 bits it is a deliberate approximation of a step function, and the check says so
    assert not verify_gradients(lambda t: straight_through_round(t, bits=8), torch.randn(3, 4)).ok
    wrong = verify_gradients(wrong_sin, torch.randn(5))
    assert not wrong.ok and not wrong.inputs[0].ok
    worst = wrong.inputs[0]
    assert worst.worst[0] == worst.worst[1]  # elementwise: the worst element is on the diagonal
    assert worst.analytical == pytest.approx(worst.numerical * 1.01, rel=1e-4)
    assert "input 0 [5]: gradcheck FAILED" in str(wrong)


def test_verify_gradients_casts_copies_to_float64_and_leaves_inputs_alone():
    x, w = torch.randn(4, 3), torch.randn(3)
    res = verify_gradients(lambda a, b: (a @ b).tanh(), x, w)
    assert res.ok and [i.index for i in res.inputs] == [0, 1]
    assert x.dtype == torch.float32 and not x.requires_grad


def cli(*args):
    return subprocess.run([sys.executable, "-m", "pitstop", *args], capture_output=True, text=True, timeout=300)


def test_cli_memory_and_budget(models_py, tmp_path, capsys):
    # one real `python -m pitstop memory` (its exit code and output through the process); the budget and the
    # usage error through the same entry point in this process: memory runs no process of its own
    out = cli("memory", f"{models_py}:stack", "--batch-size", "4", "--repeats", "2", "--json", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    assert "blocks.0" in out.stdout and "saved in subtree" in out.stdout
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["kind"] == "memory" and doc["activation_bytes"] > 0
    code = main(["memory", f"{models_py}:stack", "--batch-size", "4", "--repeats", "2", "--budget", "50%"])
    stdout = capsys.readouterr().out
    assert code == 0 and "checkpointed" in stdout and "met" in stdout
    with pytest.raises(SystemExit) as exited:  # argparse's own exit, as the console script's
        main(["memory", f"{models_py}:stack", "--budget", "150%"])
    assert exited.value.code == 2 and "percentage" in capsys.readouterr().err


def test_cli_gradcheck_exit_codes(models_py, capsys):
    # the failing check's exit 1 through a real process; the others in this process (no process of its own)
    assert main(["gradcheck", f"{models_py}:stable_lse", "--input", "float64[4,8]"]) == 0
    assert "gradients OK" in capsys.readouterr().out
    bad = cli("gradcheck", f"{models_py}:wrong_sin", "--input", "float64[6]")
    assert bad.returncode == 1 and "FAILED" in bad.stdout and "worst at" in bad.stdout
    assert main(["gradcheck", f"{models_py}:nope", "--input", "float64[6]"]) == 2
    assert "no attribute 'nope'" in capsys.readouterr().err


def test_lazy_namespaces():
    assert pitstop.memory.activation_report is activation_report and pitstop.numerics.logsumexp is logsumexp
