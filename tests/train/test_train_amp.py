"""fp16 autocast with loss scaling as edits of a plain loop (issue 45): the whole AMP pattern at the
script's own lines. The edits are tested on source text with the sites a discovery run records;
two discovery runs of tests/train/scripts/amp_loop.py prove the sites are found and the patched
script trains the same without pitstop, on the CPU (torch's CPU fp16 autocast and GradScaler)."""

from __future__ import annotations

import ast
import shutil
import subprocess
from dataclasses import replace

import pytest

from pitstop.train.config import TrainConfig
from pitstop.train.script import edits
from pitstop.train.variants import gate
from tests.train.test_train_script import GIT, _discover, final_loss, repo, run

FP16 = TrainConfig(precision="fp16-autocast")
LOOP = """import torch
from torch import nn

model, opt = build()
for x, y in data:
    opt.zero_grad()
    out = model(x)
    loss = nn.functional.mse_loss(out, y)
    loss.backward()
{clip}    opt.step()
    sched.step()
"""


def site(file, line, function="<module>", first_line=1, **extra):
    return {"file": str(file), "line": line, "function": function, "first_line": first_line, **extra}


def found(file, steps, clips=(), backward=9, forward=7):
    return {"script": str(file), "trainers": [], "sites": {
        "pairs": [{"forward": [site(file, forward)], "backward": [site(file, backward)]}],
        "steps": [site(file, line) for line in steps], "clips": [site(file, line) for line in clips]}}


def patched(tmp_path, text, steps, clips=(), device="cpu", **kwargs):
    script = tmp_path / "train.py"
    script.write_text(text)
    out = edits.apply(edits.plan(FP16, found(script, steps, clips, **kwargs), device))[str(script)]
    ast.parse(out)  # the patched file is Python
    return out


def test_the_whole_amp_pattern_at_the_loops_own_lines(tmp_path):
    clip = "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    text = patched(tmp_path, LOOP.format(clip=clip), steps=[11], clips=[10])
    assert "scaler = torch.amp.GradScaler('cpu')" in text.splitlines()[2]  # once, after the imports
    assert "    with torch.autocast('cpu', dtype=torch.float16):\n        out = model(x)\n        loss = " in text
    assert ("    scaler.scale(loss).backward()\n    scaler.unscale_(opt)\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    scaler.step(opt)\n    scaler.update()\n    sched.step()\n") in text  # unscaled before the clip


def test_without_clipping_nothing_is_unscaled(tmp_path):
    text = patched(tmp_path, LOOP.format(clip=""), steps=[10])
    assert "unscale_" not in text and "    scaler.step(opt)\n    scaler.update()\n    sched.step()\n" in text


def test_two_optimizers_step_through_one_scaler_and_it_updates_once_after_the_last(tmp_path):
    text = LOOP.format(clip="    nn.utils.clip_grad_value_(model.parameters(), 0.5)\n") + (
        "    d_opt.zero_grad()\n    d_loss = critic(x).mean()\n    d_loss.backward()\n"
        "    nn.utils.clip_grad_value_(critic.parameters(), 0.5)\n    d_opt.step()\n")
    script = tmp_path / "train.py"
    script.write_text(text)
    sites = found(script, steps=[11, 17], clips=[10, 16])
    sites["sites"]["pairs"].append({"forward": [site(script, 14)], "backward": [site(script, 15)]})
    out = edits.apply(edits.plan(FP16, sites, "cuda"))[str(script)]
    assert out.count("GradScaler('cuda')") == 1 and out.count("scaler.update()") == 1
    assert ("    scaler.unscale_(opt)\n    nn.utils.clip_grad_value_(model.parameters(), 0.5)\n"
            "    scaler.step(opt)\n") in out
    assert ("    scaler.unscale_(d_opt)\n    nn.utils.clip_grad_value_(critic.parameters(), 0.5)\n"
            "    scaler.step(d_opt)\n    scaler.update()\n") in out
    assert out.count("scaler.scale(") == 2 and "scaler.scale(d_loss).backward()" in out


def test_a_branch_that_updates_without_the_step_is_named_on_the_scalers_line(tmp_path):
    """pytorch/examples' word language model: the clip runs every step, the optimizer only under
    `if args.use_optimizer:`, a hand-written update in its else branch. The edit holds for the measured
    path (unscale_ before the clip, the step through the scaler) and says in the patch which branch
    would see scaled gradients; an accumulation step (no else) gets no caveat."""
    clip = "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    text = LOOP.format(clip=clip).replace("    opt.step()\n", "    if args.use_optimizer:\n        opt.step()\n"
                                          "    else:\n        for p in model.parameters():\n"
                                          "            p.data.add_(p.grad, alpha=-lr)\n")
    out = patched(tmp_path, text, steps=[12], clips=[10])
    assert ("# fp16 gradients underflow without loss scaling; measured where the optimizer steps: the else "
            "branch of `if args.use_optimizer:` takes no step, and would update from scaled gradients") in out
    assert "    scaler.unscale_(opt)\n    torch.nn.utils.clip" in out and "        scaler.step(opt)\n" in out
    accumulating = LOOP.format(clip="").replace("    opt.step()\n", "    if (i + 1) % 4 == 0:\n        opt.step()\n")
    assert "measured where" not in patched(tmp_path, accumulating, steps=[11])


def test_a_name_the_script_uses_is_not_taken(tmp_path):
    text = patched(tmp_path, "scaler = 2\n" + LOOP.format(clip=""), steps=[11], backward=10, forward=8)
    assert "amp_scaler = torch.amp.GradScaler('cpu')" in text and "amp_scaler.step(opt)" in text


@pytest.mark.parametrize(("text", "steps", "clips", "why"), [
    (LOOP.format(clip="").replace("opt.step()", "opt.step(closure)"), [10], [], "takes arguments"),
    ("scaler = torch.amp.GradScaler()\n" + LOOP.format(clip=""), [11], [], "builds its own GradScaler"),
    (LOOP.format(clip="") + "def clip():\n    nn.utils.clip_grad_value_(params, 1)\n", [10], [13],
     "outside the function that steps"),
])
def test_what_cannot_be_edited_safely_says_why(tmp_path, text, steps, clips, why):
    script = tmp_path / "train.py"
    script.write_text(text)
    sites = found(script, steps, clips, **({"backward": 10, "forward": 8} if text.startswith("scaler") else {}))
    if clips == [13]:
        sites["sites"]["clips"] = [site(script, 13, "clip", 12)]
    with pytest.raises(edits.NotMechanical, match=why):
        edits.apply(edits.plan(FP16, sites, "cpu"))


@pytest.mark.parametrize(("kind", "made", "flag"), [("lightning", "Trainer", 'precision="16-mixed"'),
                                                    ("hf-arguments", "TrainingArguments", "fp16=True")])
def test_a_trainer_gets_its_own_fp16_flag(tmp_path, kind, made, flag):
    script = tmp_path / "t.py"
    script.write_text(f"t = {made}(max_steps=10)\n")
    trainers = [{"kind": kind, "class": made, "site": {"file": str(script), "line": 1}, "keywords": []}]
    text = edits.apply(edits.plan(FP16, {"trainers": trainers, "sites": {}}, "cpu"))[str(script)]
    assert f"{made}(max_steps=10, {flag})" in text


def test_hf_bf16_on_a_cpu_also_says_use_cpu(tmp_path):
    """transformers 5 refuses TrainingArguments(bf16=True) on a machine without a GPU unless
    use_cpu=True (found on the course's Trainer script: its bf16 variant failed); a call that has it
    keeps it once; on CUDA only the flag."""
    script = tmp_path / "t.py"
    bf16 = TrainConfig(precision="bf16-autocast")
    for source, want in (("TrainingArguments(max_steps=10)",
                          "TrainingArguments(max_steps=10, bf16=True, use_cpu=True)"),
                         ("TrainingArguments(use_cpu=True)", "TrainingArguments(use_cpu=True, bf16=True)")):
        script.write_text(f"t = {source}\n")
        trainers = [{"kind": "hf-arguments", "class": "TrainingArguments", "site": {"file": str(script), "line": 1},
                     "keywords": []}]
        assert want in edits.apply(edits.plan(bf16, {"trainers": trainers, "sites": {}}, "cpu"))[str(script)]
    on_gpu = edits.apply(edits.plan(bf16, {"trainers": trainers, "sites": {}}, "cuda"))[str(script)]
    assert "use_cpu" not in on_gpu.replace("TrainingArguments(use_cpu=True", "")


@pytest.mark.skipif(GIT is None, reason="git is not installed")
@pytest.mark.parametrize("args", [("--clip", "norm"), ("--two", "--clip", "value")])
def test_the_discovery_finds_the_steps_and_clips_and_the_patched_loop_trains_the_same(tmp_path, args):
    """Only a run of the script shows where its optimizers step and its gradients are clipped; the
    patched script runs fp16 autocast with a CPU GradScaler, without pitstop, to the original's loss."""
    script = repo(tmp_path, "amp_loop.py")
    group = _discover(script, *args)
    try:
        sites = group.found["sites"]
        assert [s["line"] for s in sites["steps"]] == ([36, 43] if "--two" in args else [36])
        assert [c["line"] for c in sites["clips"]] == ([35, 42] if "--two" in args else [33])
        patch = group.recipe(FP16)
        assert "(--allow-emulated measures it anyway)" in gate(FP16, group.target)  # fp16 on a CPU: emulated
        assert gate(FP16, replace(group.target, allow_emulated=True)) is None
    finally:
        group.close()
    copy = tmp_path / "patched"
    copy.mkdir()
    shutil.copy(script, copy / script.name)
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    (copy / "p.diff").write_text(patch)
    subprocess.run(["git", "apply", "p.diff"], cwd=copy, check=True)
    assert "scaler.unscale_(optimizer)" in (copy / script.name).read_text()
    before = run(script.name, *args, cwd=tmp_path, pitstop=False)
    after = run(script.name, *args, cwd=copy, pitstop=False)
    assert after.returncode == 0, after.stderr
    assert abs(final_loss(after.stdout) - final_loss(before.stdout)) < 0.1 * final_loss(before.stdout) + 0.05
