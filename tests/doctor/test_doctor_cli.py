"""``pitstop doctor SCRIPT``: unmodified scripts in a subprocess, exit codes, crashes, JSON."""

import json
import os
import subprocess
import sys
import textwrap

import jsonschema

from pitstop.schemas import DOCTOR_SCHEMA

LOOP = """
import sys
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 4
for step in range(steps):
    {zero}
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    opt.step()
{tail}
print("script ran as", __name__, "with", sys.argv[1:])
"""


def script(tmp_path, zero="opt.zero_grad()", tail="", name="train.py"):
    path = tmp_path / name
    path.write_text(LOOP.format(zero=zero, tail=textwrap.dedent(tail)))
    return path


def doctor(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-m", "pitstop", "doctor", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


def test_a_clean_script_runs_as_main_with_its_own_arguments(tmp_path):
    out = doctor(script(tmp_path), "--steps", "3", "--lr", "0.1")
    assert out.returncode == 0, out.stderr
    assert "script ran as __main__ with ['--steps', '3', '--lr', '0.1']" in out.stdout
    assert "no findings in 3 optimizer step(s)" in out.stdout


def test_findings_exit_1_with_json_and_fail_on(tmp_path):
    path = script(tmp_path, zero="pass")
    report = tmp_path / "report.json"
    out = doctor("--json", report, "--html", tmp_path / "report.html", path)
    assert out.returncode == 1
    html = (tmp_path / "report.html").read_text()
    assert "<svg" in html and "PIT101" in html and "http://" not in html
    assert "PIT101" in out.stdout and "stale-gradients" in out.stdout
    doc = json.loads(report.read_text())
    jsonschema.validate(doc, DOCTOR_SCHEMA)
    assert doc["kind"] == "doctor" and doc["steps"] == 4 and doc["exit"] == {"status": "ok"}
    f = doc["findings"][0]
    assert (f["code"], f["name"], f["severity"], f["step"], f["count"]) == ("PIT101", "stale-gradients", "error", 2, 3)
    assert f["fix"] and "model.0.weight" in f["message"]


def test_json_to_stdout_is_parseable(tmp_path):
    # the same buggy script with --fail-on never (one run for both): the finding no longer fails the run
    out = doctor("--fail-on", "never", "--json", "-", script(tmp_path, zero="pass"))
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout[out.stdout.index("{"):])  # the script's own print comes first
    assert doc["findings"][0]["code"] == "PIT101"


def test_a_crash_prints_its_traceback_the_explanation_and_the_report(tmp_path):
    tail = """
    loss = nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 1), reduction="none")
    loss.backward()
    """
    report = tmp_path / "r.json"
    out = doctor("--json", report, script(tmp_path, tail=tail))
    assert out.returncode == 1
    assert "Traceback" in out.stderr and "train.py" in out.stderr and "scalar outputs" in out.stderr
    assert "PIT110" in out.stdout
    doc = json.loads(report.read_text())
    assert doc["exit"]["status"] == "crashed" and "scalar outputs" in doc["exit"]["error"]
    assert doc["findings"][0]["where"].endswith("train.py:17")


def test_the_scripts_exit_code_passes_through(tmp_path):
    out = doctor(script(tmp_path, tail="sys.exit(7)"))
    assert out.returncode == 7
    assert "no findings" in out.stdout


def test_usage_errors_are_one_line_exit_2(tmp_path):
    out = doctor(tmp_path / "missing.py")
    assert out.returncode == 2 and "not found" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = doctor("--json", tmp_path, script(tmp_path))
    assert out.returncode == 2 and "directory" in out.stderr


def test_help_teaches():
    out = doctor("--help")
    assert out.returncode == 0
    for word in ("PIT101", "PIT402", "--guard", "--fail-on", "torchrun", "--sync-every"):
        assert word in out.stdout
