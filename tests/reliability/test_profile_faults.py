"""Issue 26 for ``pitstop profile`` and ``pitstop doctor``: the script runs in a child process; its
outputs go where they were asked for (rows I, K, M), a run that measured nothing keeps a good
report, a script that exits hard still gets its report, and stdout stays JSON with ``--json -``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
LOOP = """\
import os, sys, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
{before}
for step in range({steps}):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    {backward}
    opt.step()
    print("step", step, float(loss))
{after}
"""


def script(folder: Path, name: str = "train.py", *, steps: int = 30, before: str = "", after: str = "",
           backward: str = "loss.backward()") -> Path:
    path = folder / name
    path.write_text(LOOP.format(steps=steps, before=before, after=after, backward=backward))
    return path


def pitstop(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pitstop", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=300)


@pytest.fixture(scope="module")
def good_profile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("good-profile")
    script(folder)
    proc = pitstop("profile", "--json", "jp.json", "--no-drill-down", "train.py", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder / "jp.json"


def test_outputs_land_where_asked_when_the_script_changes_directory(tmp_path):
    """Row I: a script that calls os.chdir(elsewhere) cannot move --json, --html or --trace."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "jp.json").write_text("{}")  # an old file: must be replaced, not left stale
    script(tmp_path, before=f"os.chdir({str(elsewhere)!r})", steps=12)
    proc = pitstop("profile", "--json", "jp.json", "--html", "x.html", "--trace", "tr", "--wait", "2", "--active",
                   "2", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "jp.json").read_text())
    assert doc["kind"] == "profile" and doc["steps"] == 12
    assert (tmp_path / "x.html").is_file() and any((tmp_path / "tr").iterdir())
    assert sorted(p.name for p in elsewhere.iterdir()) == []
    assert f"JSON written to {tmp_path / 'jp.json'}" in proc.stdout


@pytest.mark.parametrize(("case", "content"), [
    ("raises before step 1", "raise RuntimeError('broken before training')\n"),
    ("syntax error", "def broken(:\n"),
    ("NUL byte", "x = 1\x00\n"),
    ("never calls backward", "import torch\nm = torch.nn.Linear(4, 2)\n"
                             "for _ in range(20):\n    m(torch.randn(8, 4))\n"),
    ("runs 0 steps", "import torch\nprint('nothing to do')\n"),
])
def test_a_run_that_measured_nothing_keeps_a_good_report(good_profile, tmp_path, case, content):
    """Row K: the good jp.json is not replaced by a 0-step report."""
    good = Path(shutil.copy(good_profile, tmp_path / "jp.json"))
    before = good.read_bytes()
    (tmp_path / "train.py").write_bytes(content.encode())
    proc = pitstop("profile", "--json", "jp.json", "train.py", cwd=tmp_path)
    assert "src/pitstop" not in proc.stderr  # the script's own traceback at most, never pitstop's
    assert good.read_bytes() == before, case
    assert "left as it was" in proc.stdout or proc.returncode != 0


def test_a_crashed_run_does_not_replace_a_complete_report(good_profile, tmp_path):
    good = Path(shutil.copy(good_profile, tmp_path / "jp.json"))
    before = good.read_bytes()
    script(tmp_path, after="raise RuntimeError('after training')")
    proc = pitstop("profile", "--json", "jp.json", "--no-drill-down", "train.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert good.read_bytes() == before
    partial = json.loads((tmp_path / "jp.partial.json").read_text())
    assert partial["steps"] == 30 and partial["exit"]["status"] == "crashed"


@pytest.mark.parametrize("command", ["profile", "doctor"])
def test_json_on_stdout_stays_json_when_the_script_prints(tmp_path, command):
    """Row M: the script's prints go to stderr when the JSON goes to stdout."""
    script(tmp_path)
    extra = ["--no-drill-down"] if command == "profile" else []
    proc = pitstop(command, "--json", "-", *extra, "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # nothing but the document
    assert doc["kind"] == command and doc["steps"] == 30
    assert "step 29" in proc.stderr


@pytest.mark.parametrize("command", ["profile", "doctor"])
def test_a_script_that_exits_hard_still_gets_its_report(tmp_path, command):
    """os._exit(3) after training: the report (and the exit code) survive."""
    script(tmp_path, after="os._exit(3)")
    proc = pitstop(command, "--json", "r.json", "train.py", cwd=tmp_path)
    assert proc.returncode == 3
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["steps"] == 30 and doc["exit"]["status"] == "exited" and doc["exit"]["code"] == 3


@pytest.mark.parametrize("command", ["profile", "doctor"])
def test_a_script_killed_by_a_signal_keeps_its_last_snapshot(tmp_path, command):
    """SIGKILL in the middle of training: the last snapshot is the report, marked as such."""
    script(tmp_path, steps=400, before="import signal, time",
           backward="loss.backward()\n    if step == 300: os.kill(os.getpid(), signal.SIGKILL)\n"
                    "    time.sleep(0.01)")
    proc = pitstop(command, "--json", "r.json", "train.py", cwd=tmp_path)
    assert proc.returncode == 128 + 9
    doc = json.loads((tmp_path / "r.json").read_text())
    assert 0 < doc["steps"] <= 300 and doc["exit"]["status"] == "killed"
    assert "was killed by SIGKILL" in doc["exit"]["error"]


def test_trace_into_an_unwritable_place_is_refused_before_the_run(tmp_path):
    (tmp_path / "a-file").write_text("x")
    script(tmp_path, before="raise SystemExit('the script must not run')")
    proc = pitstop("profile", "--trace", "a-file/tr", "train.py", cwd=tmp_path)
    assert proc.returncode == 2 and "--trace: " in proc.stderr and "must not run" not in proc.stderr
