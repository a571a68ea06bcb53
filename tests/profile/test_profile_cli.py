"""`pitstop profile`: every example of its --help and of its docs page run (in this process, through
the command line's own entry point), the JSON in the issue's shape, the HTML page, usage errors."""

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

import pitstop
from pitstop.cli import main
from pitstop.cli.profile import PROFILE_EPILOG
from pitstop.schemas import PROFILE_SCHEMA
from tests.docs.snippets import blocks

SCRIPTS = Path(__file__).parent / "scripts"
PAGE = Path(__file__).resolve().parents[2] / "docs/commands/profile.md"

TRAIN = """
import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(args.epochs):
    for step in range(12):
        opt.zero_grad()
        loss = model(torch.randn(16, 32)).pow(2).mean()
        loss.backward()
        opt.step()
print("trained", args.epochs, "epoch(s)")
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    for name in ("slow_loader.py", "_common.py"):  # the docs' sample output is this script's
        shutil.copy(SCRIPTS / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def examples(text):
    """The `pitstop profile ...` command lines of a help text or a docs page."""
    lines = [line.strip().removeprefix("$ ").split("  ")[0] for line in text.splitlines()
             if line.strip().removeprefix("$ ").startswith("pitstop profile ")]
    return [line.split()[2:] for line in lines]


def test_help_examples_run(workdir, capfd):
    found = examples(PROFILE_EPILOG)
    assert len(found) == 3
    for argv in found:
        assert main(["profile", *argv]) == 0
    out, _ = capfd.readouterr()
    assert "trained 1 epoch(s)" in out and "phase        ms/step" in out
    doc = json.loads((workdir / "prof.json").read_text())
    jsonschema.validate(doc, PROFILE_SCHEMA)
    assert [p["name"] for p in doc["phases"]] == ["data", "h2d", "forward", "backward", "optimizer", "sync", "other"]
    assert doc["drill_down"]["steps"] == [7, 9] and doc["drill_down"]["left_out"] == [5, 9]  # wait 5, warm-up 1
    assert any(op["op"] == "aten::addmm" for op in doc["top_ops"]["forward"])
    html = (workdir / "prof.html").read_text()
    assert "<svg" in html and "stacked phases" in html and "Step time per optimizer step" in html
    assert "http://" not in html and "<script" not in html
    traces = list((workdir / "traces").glob("pitstop_trace_steps_*.json"))
    assert len(traces) == 1 and json.loads(traces[0].read_text())["traceEvents"]


def test_docs_examples_run(workdir, capsys):
    """The blocks of docs/commands/profile.md marked `tested-by` this test: the sample output's command
    line and the in-process example (its examples are --help's: test_help_examples_run)."""
    mine = [b for b in blocks(PAGE) if b.kind == "tested-by" and b.arg.endswith("::test_docs_examples_run")]
    found = examples("".join(b.text for b in mine if b.lang in ("bash", "text")))
    assert found == [["slow_loader.py", "--steps", "20"]]
    for argv in found:
        assert main(["profile", *argv]) == 0
    (code,) = [b.text for b in mine if b.lang == "python"]  # the adapters' block is test_profile_adapters.py's
    loader = [(__import__("torch").randn(16, 32), __import__("torch").randn(16, 1)) for _ in range(10)]
    scope = {"pitstop": pitstop, "loader": loader}
    exec(compile(code, str(PAGE), "exec"), {**scope, "train_step": _step()})
    assert "step" in capsys.readouterr().out


def _step():
    import torch
    from torch import nn

    model = nn.Linear(32, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def train_step(batch):
        x, y = batch
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    return train_step


def test_the_scripts_exit_code_passes_through(workdir, capsys):
    (workdir / "fail.py").write_text(TRAIN + "\nraise SystemExit(3)\n")
    assert main(["profile", "--json", "out.json", "fail.py"]) == 3
    assert json.loads((workdir / "out.json").read_text())["exit"] == {"status": "exited", "code": 3}
    # the same saved profile (12 steps trained, then the exit) renders again through `pitstop report`
    assert main(["report", "out.json", "--html", "again.html"]) == 0
    assert "stacked phases" in (workdir / "again.html").read_text()


@pytest.mark.parametrize("argv, message", [
    (["missing.py"], "script 'missing.py' not found"),
    (["--active", "11", "train.py"], "--active: at most 10 steps"),
    (["--trace", "t", "--no-drill-down", "train.py"], "--trace needs the drill-down"),
])
def test_usage_errors_exit_2_with_one_line(workdir, capsys, argv, message):
    assert main(["profile", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
