"""``pitstop train`` end to end (one fast run: two cheap axes, a tiny CNN), the saved recipe run
standalone without pitstop, the JSON (schema, round trip, ``pitstop compare``), the HTML; usage
errors; and (slow) every example of ``--help``."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pitstop.cli.train import TRAIN_EPILOG
from pitstop.schemas import TRAIN_SCHEMA

SRC = str(Path(__file__).resolve().parents[2] / "src")


def pitstop(*args: str, cwd: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run([sys.executable, "-m", "pitstop", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("train")
    models = Path(__file__).parent / "train_models.py"
    proc = pitstop("train", f"{models}:cnn", "--input", "float32[B,3,16,16]", "--target", "int64[B]{0,4}",
                   "--optimizer", "adamw", "--lr", "1e-2", "--batch-size", "8", "--techniques", "zero_grad",
                   "--time-budget-s", "10", "--replicas", "1", "--save", str(out / "recipe"),
                   "--json", str(out / "train.json"), "--html", str(out / "train.html"))
    return out, proc


def test_cli_end_to_end(run):
    out, proc = run
    assert proc.returncode == 0, proc.stderr
    assert "Winner:" in proc.stdout and "Trajectory gate" in proc.stdout
    doc = json.loads((out / "train.json").read_text())
    jsonschema.validate(doc, TRAIN_SCHEMA)
    stages = {r["stage"] for r in doc["results"]}
    assert stages == {"probe", "final"}
    naive = next(r for r in doc["results"] if r["variant"] == "naive" and r["stage"] == "final")
    assert len(naive["fidelity"]["trajectory"]["losses"]) == 3  # the fp32 seeds
    assert {r["variant"] for r in doc["results"]} == {"naive", "zero-grad-zeros"}
    assert "<svg" in (out / "train.html").read_text()
    # MFU in factory mode too: the step's FLOPs (a conv, a linear: forward and backward) against the peak
    assert doc["problem"]["flops_per_step"] > 0 and doc["problem"]["peaks"]["fp32"] > 1e8
    used = naive["mfu"]
    assert used["precision"] == "fp32" and 0 < used["fraction"] < 1
    assert used["achieved_flops"] == pytest.approx(used["flops_per_step"] / (naive["latency_ms"]["median"] / 1e3))
    assert "MFU:" in proc.stdout


def test_report_round_trips_through_json(run):
    from pitstop.train.result import TrainReport

    out, _ = run
    doc = json.loads((out / "train.json").read_text())
    again = TrainReport.from_dict(doc).to_dict()
    assert again["winner"]["variant"] == doc["winner"]["variant"]
    assert [r["samples_ms"] for r in again["results"]] == [r["samples_ms"] for r in doc["results"]]
    assert "naive" in TrainReport.from_dict(doc).table()


def test_saved_recipe_trains_without_pitstop(run):
    out, _ = run
    recipe = out / "recipe" / "recipe.py"
    assert "def train_step(model, optimizer, batch)" in recipe.read_text()
    code = (f"import sys; sys.modules['pitstop'] = None; import runpy; "
            f"runpy.run_path({str(recipe)!r}, run_name='__main__')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=out, timeout=300)
    assert proc.returncode == 0, proc.stderr
    first, last = (float(x) for x in proc.stdout.split("loss ")[1].split(" after")[0].split(" -> "))
    assert last < first  # it trains


def test_compare_reads_train_files(run, capsys):
    from pitstop.cli import main

    out, _ = run
    # in-process: the compare command's reading of train files, without a second torch import
    assert main(["compare", str(out / "train.json"), str(out / "train.json")]) == 0
    stdout = capsys.readouterr().out
    assert "naive" in stdout and "no regression" in stdout


@pytest.mark.parametrize(("args", "message"), [
    (["zoo:cnn", "--target", "flot[B]"], "expected a dtype"),
    (["zoo:cnn", "--trajectory-steps", "5"], "--trajectory-steps: must be at least 20"),
    (["zoo:cnn", "--techniques", "warp"], "--techniques: unknown warp"),
    (["zoo:cnn", "--optimizer", "adamz"], "unknown optimizer 'adamz'"),
])
def test_usage_errors_are_one_line(args, message, capsys):
    from pitstop.cli import main

    assert main(["train", *args, "--time-budget-s", "10"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


MY_MODEL = '''
from torch import nn


def build():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
'''


TRAIN_PY = (Path(__file__).parent / "scripts" / "plain_loop.py").read_text().replace('"--iters"', '"--max-iters"') \
    .replace("args.iters", "args.max_iters")


def help_examples() -> list[list[str]]:
    """The help's example command lines (their trailing comments, after three spaces, left out)."""
    import re

    text = re.sub(r"\\\n\s*", " ", TRAIN_EPILOG.split("\n\n")[0])
    return [shlex.split(re.split(r"\s{3,}", line.strip())[0])[1:]
            for line in text.splitlines() if line.strip().startswith("pitstop train")]


def test_help_lists_the_examples():
    assert len(help_examples()) == 5


@pytest.mark.slow
@pytest.mark.parametrize("example", help_examples(), ids=lambda e: e[1])
def test_help_examples_run(example, tmp_path):
    (tmp_path / "my_model.py").write_text(MY_MODEL)
    (tmp_path / "train.py").write_text(TRAIN_PY)
    short = ["--time-budget-s", "15", "--techniques", "zero_grad", "--replicas", "1"]  # the example, briefly
    proc = pitstop(*example, *short, cwd=str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "Winner:" in proc.stdout
