"""benchmarks/doctor_realworld.py: its corpus handling, edits, setup, output comparison and verdicts,
on small real training scripts written here (the public scripts themselves are never committed)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "doctor_realworld.py"
COMMIT = "0" * 40

TRAIN = """\
import time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
t0 = time.time()
for step in range(int(open("steps.txt").read())):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f} time {1000 * (time.time() - t0):.2f}ms")
"""


def load_bench():
    spec = importlib.util.spec_from_file_location("doctor_realworld", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, env=env, timeout=300)


def corpus_with(tmp_path: Path, source: str) -> Path:
    corpus = tmp_path / "corpus"
    path = corpus / "someone+examples" / COMMIT / "tiny" / "train.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    return corpus


def entry(name: str, expected: object, **extra: object) -> dict[str, object]:
    return {"name": name, "repo": "someone/examples", "commit": COMMIT, "path": "tiny/train.py",
            "files": ["tiny/train.py"], "args": [], "expected": expected,
            "setup": [["{python}", "-c", "open('steps.txt', 'w').write('3')"]], **extra}


def test_absent_files_one_line_exit_0(tmp_path: Path) -> None:
    proc = run("--corpus", str(tmp_path), "--only", "mnist")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1 and "not here" in proc.stdout and "mnist" in proc.stdout


def test_manifest_is_complete() -> None:
    scripts = json.loads((ROOT / "benchmarks" / "doctor_realworld.json").read_text())["scripts"]
    assert len(scripts) >= 12 and len({s["name"] for s in scripts}) == len(scripts)
    for s in scripts:
        assert {"repo", "path", "commit", "args", "expected", "files"} <= s.keys(), s["name"]
        assert len(s["commit"]) == 40 and s["path"] in s["files"]
        assert all(e["reason"] and e["old"] != e["new"] for e in s.get("edits", [])), s["name"]


def test_masking_and_comparison() -> None:
    bench = load_bench()
    plain = "step 0 loss 1.0 time 3.20ms\n| ms/batch 12.5 | mfu -100.00%\n"
    doctored = "step 0 loss 1.0 time 9.87ms\n| ms/batch 40.1 | mfu 3.00%\npitstop doctor: no findings\n"
    assert bench.same_output(plain, doctored, {}) == (True, "")
    same, diff = bench.same_output("loss 1.0\n", "loss 1.5\n", {})
    assert not same and "1.5" in diff
    assert bench.same_output("a 1\nb 2\n", "b 7\na 9\n", {"compare": "unordered", "mask_all_numbers": True})[0]


def test_correct_and_buggy_script_verdicts(tmp_path: Path) -> None:
    """Real plain and doctored runs of a correct script and of one edited to drop zero_grad: only real runs prove
    the edit, the setup, the output comparison and doctor's findings (the verdict rules: the test below)."""
    corpus = corpus_with(tmp_path, TRAIN)
    no_zero_grad = [{"file": "tiny/train.py", "old": "    opt.zero_grad()\n", "new": "",
                     "reason": "inject stale gradients (PIT101)"}]
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"scripts": [entry("tiny", "correct"),
                                                entry("buggy", ["PIT101"], edits=no_zero_grad)]}))
    out = tmp_path / "r.json"
    proc = run("--manifest", str(manifest), "--corpus", str(corpus), "--rounds", "1", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    results = {r["name"]: r for r in json.loads(out.read_text())}
    assert results["tiny"]["verdict"] == "OK" and results["tiny"]["steps"] == [3]
    assert results["tiny"]["output_same"] and results["tiny"]["rc_plain"] == results["tiny"]["rc_doctor"] == 0
    assert results["buggy"]["verdict"] == "OK" and "PIT101:error" in results["buggy"]["findings"]
    assert "warning/error findings on the 1 correct scripts: none" in proc.stdout
    assert len([line for line in proc.stdout.splitlines() if "->" in line]) == 2


def test_a_correct_script_with_findings_is_flagged_and_counted() -> None:
    """The verdict and summary rules on run records: the buggy script's runs labelled correct are FINDINGS
    (the run that was a third manifest entry, buggy_said_correct), and the summary names it."""
    bench = load_bench()
    stdout = "step 0 loss 1.0 time 3.20ms\n"
    report = {"findings": [{"code": "PIT101", "severity": "error", "where": "opt", "step": 1, "count": 3,
                            "message": "stale"}], "steps": 3, "exit": {"status": "ok"}}
    runs = {"plain": [{"rc": 0, "stdout": stdout, "stderr": "", "wall_s": 1.0, "report": None}],
            "doctor": [{"rc": 0, "stdout": stdout, "stderr": "", "wall_s": 1.5, "report": report}]}
    buggy, said_correct = entry("buggy", ["PIT101"]), entry("buggy_said_correct", "correct")
    assert bench.evaluate(buggy, runs)["verdict"] == "OK"
    flagged = bench.evaluate(said_correct, runs)
    assert flagged["verdict"] == "FINDINGS" and flagged["findings"] == ["PIT101:error"]
    assert bench.evaluate(entry("missed", ["PIT101", "PIT102"]), runs)["verdict"] == "MISSED"
    lines = bench.summary([bench.evaluate(buggy, runs), flagged], {"buggy": buggy, "buggy_said_correct": said_correct})
    assert "warning/error findings on the 1 correct scripts: 1 (buggy_said_correct)" in lines


def test_edit_of_another_version_is_refused(tmp_path: Path) -> None:
    corpus = corpus_with(tmp_path, TRAIN)
    manifest = tmp_path / "m.json"
    bad = entry("tiny", "correct", edits=[{"file": "tiny/train.py", "old": "no such text", "new": "x",
                                           "reason": "r"}])
    manifest.write_text(json.dumps({"scripts": [bad]}))
    proc = run("--manifest", str(manifest), "--corpus", str(corpus), "--rounds", "1")
    assert proc.returncode != 0 and "exactly once, found 0" in proc.stderr


def test_collect_from_a_git_mirror(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "tiny").mkdir(parents=True)
    (work / "tiny" / "train.py").write_text(TRAIN)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    mirror = tmp_path / "mirrors" / "someone+examples" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror)], check=True)
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"scripts": [entry("tiny", "correct", commit=commit)]}))
    corpus = tmp_path / "corpus"
    proc = run("--manifest", str(manifest), "--corpus", str(corpus), "--collect", str(tmp_path / "mirrors"))
    assert proc.returncode == 0, proc.stderr
    assert (corpus / "someone+examples" / commit / "tiny" / "train.py").read_text() == TRAIN
