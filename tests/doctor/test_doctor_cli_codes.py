"""Every run-time code on a small real training script with the bug, and on the same script without
it (no false finding): all of them the way the CLI's child runs a script (``run_script`` under a
``Doctor`` built as ``pitstop doctor`` builds it, in this process), and through the CLI itself
(``python -m pitstop doctor script.py``: a process each, one code in the default run, every code
under ``-m slow``). The loops live in a ``main()`` function, as most real scripts are written: the
model is gone by the time the end-of-run checks run."""

import json
import os
import subprocess
import sys

import pytest

PRELUDE = """
import time
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
MODEL = lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))
DATA = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(12)]


def main():
    model = MODEL()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
{body}

if __name__ == "__main__":
    main()
"""

STEP = """
    for x, y in DATA:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
"""

# code -> (the loop with the bug, the loop without it)
SCRIPTS = {
    "PIT101": (STEP.replace("opt.zero_grad()", "pass"),
               STEP.replace("opt.zero_grad()", "pass").replace("opt.step()", "opt.step()\n        opt.zero_grad()")),
    "PIT102": (STEP + "        kept.append(loss)\n", STEP + "        kept.append(loss.item())\n"),
    "PIT103": (STEP.replace("loss.backward()", "loss.backward(retain_graph=True)"), STEP),
    "PIT104": (STEP.replace("loss = nn", "with torch.no_grad():\n            loss = nn"),
               STEP + "        model.eval()\n        with torch.no_grad():\n            model(x)\n"
               "        model.train()\n"),
    "PIT105": ("""
    extra = nn.Linear(8, 1)  # in the optimizer, never in the loss
    opt.add_param_group({"params": extra.parameters()})""" + STEP, STEP),
    "PIT106": (STEP.replace("loss = nn", "x = x.clone(); x[0, 0] = float('nan') if len(kept) > 5 else 0.0\n"
                            "        kept.append(1)\n        loss = nn"), STEP),
    "PIT107": (STEP.replace("model(x), y)", "model(x), y * (1e5 if len(kept) == 10 else 1.0))")
               + "        kept.append(1)\n", STEP),
    "PIT108": ("""
    with torch.no_grad():
        model[0].bias.fill_(-100.0)  # every unit of the hidden ReLU dead from the start""" + STEP, STEP),
    "PIT109": ("    model.eval()\n" + STEP, STEP + "    model.eval()\n    with torch.no_grad():\n        model(x)\n"),
    "PIT110": (STEP.replace("y)", "y, reduction='none')"), STEP.replace("y)", "y, reduction='none').mean()")),
    "PIT201": (STEP + "    model.eval()\n    for x, _ in DATA:\n        model(x)\n",
               STEP + "    model.eval()\n    with torch.inference_mode():\n"
               "        for x, _ in DATA:\n            model(x)\n"),
    "PIT402": ("""
    class Slow(Dataset):
        def __len__(self):
            return 48

        def __getitem__(self, i):
            time.sleep(0.02)  # the data pipeline, far slower than the model
            return torch.randn(8), torch.randn(1)

    for x, y in DataLoader(Slow(), batch_size=4):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
""", """
    for x, y in DataLoader(DATA, batch_size=None):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
"""),
}


def doctor(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-m", "pitstop", "doctor", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def write(tmp_path, body, name="train.py"):
    """The training script with ``body`` as its loop."""
    path = tmp_path / name
    path.write_text(PRELUDE.format(body="    kept = []\n" + body.strip("\n")))
    return path


def run(tmp_path, body, name="train.py"):
    path = write(tmp_path, body, name)
    report = tmp_path / f"{name}.json"
    out = doctor("--json", report, "--fail-on", "never", path, cwd=tmp_path)
    assert report.exists(), out.stderr[-3000:]
    return json.loads(report.read_text()), out


def in_process(tmp_path, monkeypatch, body):
    """The script run as the CLI's child runs it: ``run_script`` under ``Doctor()``, in this process."""
    from pitstop.doctor import Doctor
    from pitstop.doctor.script import run_script

    path = write(tmp_path, body)
    monkeypatch.chdir(tmp_path)
    report, code = run_script(str(path), [], Doctor())
    return report.to_dict(), code


@pytest.mark.parametrize("code", sorted(SCRIPTS))
def test_the_buggy_script_reports_the_code(code, tmp_path, monkeypatch):
    doc, _ = in_process(tmp_path, monkeypatch, SCRIPTS[code][0])
    assert code in {f["code"] for f in doc["findings"]}, doc["findings"]


@pytest.mark.parametrize("code", sorted(SCRIPTS))
def test_the_clean_script_reports_nothing(code, tmp_path, monkeypatch):
    doc, rc = in_process(tmp_path, monkeypatch, SCRIPTS[code][1])
    assert doc["findings"] == [] and rc == 0, doc["findings"]
    assert doc["steps"] >= 12


# PIT402 through the CLI in the default run, the rest under -m slow (a process each). PIT101's buggy script
# through the CLI is test_doctor_cli.py's test_findings_exit_1_with_json_and_fail_on and the documented
# examples' (test_doctor_cli_runs.py); a clean script through it, test_a_clean_script_runs_as_main_...
THROUGH_THE_CLI = {"PIT402"}
CLI_CODES = [pytest.param(c, marks=() if c in THROUGH_THE_CLI else pytest.mark.slow) for c in sorted(SCRIPTS)]


@pytest.mark.parametrize("code", CLI_CODES)
def test_the_buggy_script_reports_the_code_through_the_cli(code, tmp_path):
    doc, out = run(tmp_path, SCRIPTS[code][0])
    assert code in {f["code"] for f in doc["findings"]}, (doc["findings"], out.stderr[-2000:])


@pytest.mark.parametrize("code", CLI_CODES)
def test_the_clean_script_reports_nothing_through_the_cli(code, tmp_path):
    doc, out = run(tmp_path, SCRIPTS[code][1])
    assert doc["findings"] == [] and doc["exit"] == {"status": "ok"}, (doc["findings"], out.stderr[-2000:])
    assert doc["steps"] >= 12


def test_every_run_time_code_has_a_cli_pair():
    from pitstop.doctor.findings import RUN_TIME

    assert set(SCRIPTS) == set(RUN_TIME)
