"""The thin framework adapters (Lightning, HF Trainer callbacks) and torchrun with DDP (gloo)."""

import json
import os
import subprocess
import sys
import textwrap
import types

import pytest
import torch
from torch import nn

from tests.fixtures.torchrun import finished


def test_lightning_callback_reports_a_bug_in_a_lightning_module(tmp_path):
    L = pytest.importorskip("lightning", reason="the lightning extra is part of dev")
    from pitstop.doctor.adapters.lightning import DoctorCallback

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))

        def training_step(self, batch, _):
            x, y = batch
            self.net.eval()  # the bug: the training forward runs in eval mode
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 1))
    callback = DoctorCallback(verbose=False, json_path=str(tmp_path / "r.json"))
    trainer = L.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                        default_root_dir=tmp_path)
    trainer.fit(Module(), torch.utils.data.DataLoader(data, batch_size=8))
    report = callback.report
    assert report.steps == 4
    f = next(f for f in report if f.code == "PIT109")
    assert f.where == "model.net"  # named inside the LightningModule
    assert json.loads((tmp_path / "r.json").read_text())["findings"][0]["code"] == "PIT109"


def test_hf_trainer_callback_attaches_and_reports():
    transformers = pytest.importorskip("transformers", reason="the zoo extra is part of make test")
    from pitstop.doctor.adapters.hf import DoctorCallback

    assert issubclass(DoctorCallback, transformers.TrainerCallback)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    callback = DoctorCallback(verbose=False)
    args = types.SimpleNamespace()  # TrainingArguments needs accelerate; the callback never reads it
    state, control = transformers.TrainerState(), transformers.TrainerControl()
    callback.on_train_begin(args, state, control, model=model, optimizer=opt)  # what Trainer calls
    for _ in range(3):
        loss = model(torch.randn(4, 8)).pow(2).mean() * float("nan")  # a NaN loss the Trainer would only log
        loss.backward()
        opt.step()
        opt.zero_grad()
    callback.on_train_end(args, state, control)
    assert {f.code for f in callback.report} >= {"PIT106"}
    assert callback.watcher is None and torch.autograd.backward.__module__ == "torch.autograd"


DDP = """
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
for step in range(4):
    opt.zero_grad()
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    opt.step()
    if rank == 1:
        kept.append(loss)  # the bug, on rank 1 only
dist.destroy_process_group()
"""


def torchrun(tmp_path, source, port, *args):
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "OMP_NUM_THREADS": "1",
           "PITSTOP_DOCTOR_DIR": str(tmp_path / "ranks")}
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                          "--master-port", str(port), "-m", "pitstop", "doctor", "--json", str(tmp_path / "r.json"),
                          *args, str(path)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    return json.loads((tmp_path / "r.json").read_text()), out


# from the fifth step on, rank 1 never clears its gradients: its zero_grad() sits in rank 0's logging block
DDP_STALE = DDP.replace("for step in range(4):\n    opt.zero_grad()",
                        "for step in range(8):\n    if step < 4 or rank == 0:\n        opt.zero_grad()")


def test_torchrun_ddp_gloo_two_ranks_one_merged_report_over_the_process_group(tmp_path):
    """A real DDP job (gloo, 2 ranks): the reducer writes the all-reduced gradients into ``.grad`` in
    place at every backward, which only a real process group does. Four clean steps, then rank 1
    stops clearing: PIT101 on rank 1 only, first at step 5 (none while every rank cleared)."""
    assert "if step < 4 or rank == 0:" in DDP_STALE
    doc, out = torchrun(tmp_path, DDP_STALE, 29517)
    assert doc["ranks"] == 2 and doc["steps"] == 8, out.stderr[-2000:]
    f = next(f for f in doc["findings"] if f["code"] == "PIT102")
    assert f["ranks"] == [1]
    stale = [f for f in doc["findings"] if f["code"] == "PIT101"]
    assert len(stale) == 1 and stale[0]["ranks"] == [1] and stale[0]["step"] == 5, stale
    assert "on this rank" in stale[0]["message"]
    assert out.stdout.count("PIT102") == 1  # printed once, by rank 0
    assert not (tmp_path / "ranks").exists()  # merged with gather_object before destroy_process_group, no files


def test_torchrun_without_a_process_group_merges_through_files(tmp_path):
    plain = DDP.replace('dist.init_process_group("gloo")', "import os").replace("DDP(nn.", "(nn.") \
        .replace("rank = dist.get_rank()", 'rank = int(os.environ["RANK"])').replace("dist.destroy_process_group()", "")
    doc, out = torchrun(tmp_path, plain, 29518)
    assert doc["ranks"] == 2 and doc["steps"] == 4, out.stderr[-2000:]
    assert next(f for f in doc["findings"] if f["code"] == "PIT102")["ranks"] == [1]
    assert (tmp_path / "ranks").is_dir() and not list((tmp_path / "ranks").iterdir())  # used, then cleaned up


def test_two_torchrun_nodes_on_one_machine_merge_all_four_ranks(tmp_path):
    """Issue 28: two torchrun "nodes" (--nnodes 2, c10d rendezvous on localhost), 2 ranks each: the
    doctor's report on global rank 0 merges all four, naming the one rank with the bug. With
    ``--fail-on never``: rank 0 exiting 1 on the finding would fail its node, and the other node's
    agent would wait out torchrun's exit barrier (300 s) for it."""
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(DDP.replace("if rank == 1:", "if rank == 3:")))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "OMP_NUM_THREADS": "1",
           "PITSTOP_DOCTOR_DIR": str(tmp_path / "ranks")}
    nodes = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
                               "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29541", "--rdzv-id", "pitstop",
                               "-m", "pitstop", "doctor", "--fail-on", "never",
                               "--json", str(tmp_path / f"r{node}.json"), str(path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
             for node in (0, 1)]
    outs = [n.communicate(timeout=120) for n in nodes]
    ended = [subprocess.CompletedProcess(n.args, n.returncode, *o) for n, o in zip(nodes, outs, strict=True)]
    assert all(finished(e) for e in ended), [o[1][-2000:] for o in outs]  # torch's abort at exit aside
    written = [p for p in (tmp_path / "r0.json", tmp_path / "r1.json") if p.exists()]
    assert len(written) == 1  # only global rank 0's node writes
    doc = json.loads(written[0].read_text())
    assert doc["ranks"] == 4 and doc["steps"] == 4
    assert next(f for f in doc["findings"] if f["code"] == "PIT102")["ranks"] == [3]
