"""benchmarks/train_heldout.py: its manifest is held out from the tuning corpus, it says in one line
when the third-party files are absent, and its verdicts follow the labels."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "train_heldout.py"


def load_bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("train_heldout", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_manifest_is_held_out_from_the_tuning_corpus_and_labelled() -> None:
    bench = load_bench()
    entries = bench.entries()
    tuning = json.loads((ROOT / "benchmarks" / "scripts_corpus.json").read_text())["scripts"]
    tuned = {(e["repo"], e["path"]) for e in tuning}
    assert len(entries) >= 8 and not {(e["repo"], e["path"]) for e in entries} & tuned
    assert {e["expect"] for e in entries} == {"search", "refuse"} and all(e["why"] for e in entries)
    doctor = {e["name"]: e for e in json.loads((ROOT / "benchmarks" / "doctor_realworld.json").read_text())["scripts"]}
    for e in entries:  # the search's arguments are the held-out entry's; the patched script's short run, the doctor's
        assert e["run_args"] == doctor[e["name"]]["args"] and e["run_env"] == doctor[e["name"]].get("env", {})
        assert e["files"] == doctor[e["name"]]["files"] and e["commit"] == doctor[e["name"]]["commit"]


def test_absent_files_one_line_exit_0(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(BENCH), "--corpus", str(tmp_path), "--only", "vae"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1 and "not here" in proc.stdout and "vae" in proc.stdout


def test_verdicts_follow_the_labels() -> None:
    verdict = load_bench().verdict
    base = {"plain_rc": 0, "traceback": False, "rc": 0, "patch": "", "patched_rc": None, "expect": "search"}
    assert verdict(base) == "OK"
    assert verdict({**base, "rc": 2}) == "REFUSED"
    assert verdict({**base, "rc": 2, "expect": "refuse"}) == "OK"
    assert verdict({**base, "expect": "refuse"}) == "ACCEPTED"
    assert verdict({**base, "rc": 2, "traceback": True, "expect": "refuse"}) == "CRASH"
    assert verdict({**base, "rc": 124}) == "CRASH"
    assert verdict({**base, "patch": "FAILS: error: patch failed"}) == "PATCH FAILS"
    assert verdict({**base, "patch": "applies", "patched_rc": 1}) == "PATCH FAILS"
    assert verdict({**base, "plain_rc": 1}) == "BROKEN"
    assert verdict({**base, "rc": 1}) == "NO RESULT"


LOOP = """import torch
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr={lr})
x, y = torch.randn(256, 8), torch.randn(256, 1)
while True:  # never ends on its own: the entry's max_steps ends the whole run
    for i in range(0, 256, 32):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[i:i + 32]), y[i:i + 32]).backward()
        opt.step()
"""


def test_whole_runs_end_at_max_steps_and_a_patch_that_trains_differently_is_outside_the_gate(tmp_path: Path) -> None:
    bench = load_bench()
    copies = {}
    for name, lr in (("original", 0.01), ("patched", 0.5)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "loop.py").write_text(LOOP.format(lr=lr))
        copies[name] = tmp_path / name
    entry = {"name": "loop", "path": "loop.py", "args": [], "env": {}, "shims": [], "max_steps": 30}
    # One round a copy and one more seed: the gate still has its 2 original runs (3 processes, not 5); only
    # whole processes prove that the max_steps cap ends a script that never ends on its own.
    w = bench.whole_runs(entry, copies, rounds=1, seeds=2, timeout=120)
    assert w["rc"] == {"original": [0], "patched": [0]} and w["loss_at"] == 30
    assert len(w["runs_ms"]["patched"]) == 1 and w["speedup"] > 0 and w["gate"] is not None
    assert w["gate"]["seeds"] == 2
    assert w["inside"] is False  # lr 0.5 against 0.01: not the same training
    assert "OUTSIDE the gate" in bench.whole_line(w) and "x" in bench.whole_line(w)
