"""``pitstop report FILE.json`` shows what the live command showed: for every kind of document, a
real run with ``--json`` (a real model, script, loader or source file), then the saved file
rendered again; the two terminal reports are the same text (the live one's last line, where the
JSON went, aside), and ``--html`` writes the page the live ``--html`` wrote."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from pitstop.cli import main
from pitstop.schemas import BY_KIND

M = str(Path(__file__).parents[1] / "fixtures" / "models.py")
QUICK = ["--threads", "1", "--replicas", "1"]
LOOP = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(8):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()  # PIT101: no zero_grad, gradients pile up
    opt.step()
"""
DATA = """
import torch
from torch.utils.data import Dataset

class D(Dataset):
    def __len__(self):
        return 256
    def __getitem__(self, i):
        return torch.full((4,), float(i))

def make():
    return D()
"""
LINT = """
import torch

def train(model, opt, data):
    for x, y in data:
        loss = model(x).sum()
        loss.backward()
        opt.step()
"""


def _bench(tmp: Path) -> list[str]:
    return ["bench", f"{M}:tiny", "--input", "float32[B,16]", "--batch-sizes", "1,4", "--budget-s", "0.2",
            "--variants", "eval+no_grad,eval+inference_mode", *QUICK]


def _optimize(tmp: Path) -> list[str]:
    return ["optimize", f"{M}:tiny", "--input", "float32[B,16]", "--techniques", "threads", "--time-budget-s", "10",
            *QUICK]


def _train(tmp: Path) -> list[str]:
    return ["train", f"{M}:tiny", "--input", "float32[B,16]", "--target", "float32[B,4]", "--batch-size", "4",
            "--techniques", "zero_grad", "--time-budget-s", "10", "--replicas", "1",  # the product's minimum
            "--threads", "1"]


def _script(tmp: Path) -> str:
    (tmp / "loop.py").write_text(LOOP)
    return str(tmp / "loop.py")


def _doctor(tmp: Path) -> list[str]:
    return ["doctor", "--fail-on", "never", "{out}", _script(tmp)]  # options go before the script


def _profile(tmp: Path) -> list[str]:
    return ["profile", "--no-drill-down", "--wait", "1", "{out}", _script(tmp)]


def _lint(tmp: Path) -> list[str]:
    (tmp / "loop.py").write_text(textwrap.dedent(LINT))
    return ["lint", "--fail-on", "never", str(tmp / "loop.py")]


def _memory(tmp: Path) -> list[str]:
    return ["memory", f"{M}:tiny", "--input", "float32[B,16]", "--batch-size", "4", "--repeats", "1", "--top", "3"]


OPS = """
import torch

def op(x, w):
    return (x @ w).tanh().sum()
"""


def _gradcheck(tmp: Path) -> list[str]:
    (tmp / "ops.py").write_text(OPS)
    return ["gradcheck", f"{tmp / 'ops.py'}:op", "--input", "float64[3,4];float64[4]"]


def _data(tmp: Path) -> list[str]:
    (tmp / "ds.py").write_text(DATA)
    return ["data", f"{tmp / 'ds.py'}:make", "--batch-size", "8", "--time-budget-s", "3", "--max-workers", "1",
            "--batches", "3"]


def _compare(tmp: Path) -> list[str]:
    for name in ("a", "b"):  # two real runs, one batch size each: a compare document needs no more
        bench = [a if a != "1,4" else "1" for a in _bench(tmp)]
        assert main([*bench, "--json", str(tmp / f"{name}.json")]) == 0
    return ["compare", str(tmp / "a.json"), str(tmp / "b.json"), "--threshold", "0.5"]


def _generate(tmp: Path) -> list[str]:
    return ["bench", "zoo:gpt2-tiny", "--generate", "3", "--prompt-len", "8", "--techniques", "cache",
            "--budget-s", "0.2", "--threads", "1"]


RUNS: dict[str, Callable[[Path], list[str]]] = {
    "bench": _bench, "optimize": _optimize, "train": _train, "profile": _profile, "doctor": _doctor,
    "lint": _lint, "memory": _memory, "gradcheck": _gradcheck, "data": _data, "compare": _compare,
    "generate": _generate}


def _shown(out: str) -> str:
    """The terminal report without its last line, where the JSON went."""
    lines = out.rstrip("\n").splitlines()
    assert lines and ("JSON written to" in lines[-1] or "json" in lines[-1]), lines[-3:]
    return "\n".join(lines[:-1]) + "\n"


def test_every_kind_has_a_run() -> None:
    from pitstop.report import KINDS

    assert set(RUNS) == set(KINDS) == set(BY_KIND)


def test_a_kind_is_registered_in_its_own_module_with_its_schema() -> None:
    """Each kind's text, HTML and schema come from the ``KINDS`` of one module under report/ (the
    registry gathers them; nothing else lists the kinds)."""
    import importlib

    from pitstop import schemas
    from pitstop.report import registry

    for name, kind in registry().items():
        assert getattr(schemas, kind.schema) is BY_KIND[name], name
        owners = [m for m in ("bench", "compare", "doctor", "generate", "lint", "memory", "optimize", "profile",
                              "train") if name in getattr(importlib.import_module(f"pitstop.report.{m}"), "KINDS", {})]
        assert len(owners) == 1, (name, owners)


@pytest.mark.parametrize("kind", list(RUNS))
def test_the_report_command_shows_what_the_live_run_showed(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    saved, live_html = tmp_path / "run.json", tmp_path / "live.html"
    args = RUNS[kind](tmp_path)
    capsys.readouterr()
    out = ["--json", str(saved), *([] if kind == "lint" else ["--html", str(live_html)])]
    args = [*args, *out] if "{out}" not in args else [a for x in args for a in (out if x == "{out}" else [x])]
    code = main(args)
    live = capsys.readouterr().out
    assert code in (0, 1), live
    doc = json.loads(saved.read_text())
    assert doc["kind"] == kind
    jsonschema.validate(doc, BY_KIND[kind])  # the schema its docs page shows
    if kind == "lint":  # lint prints its concise lines and the summary; --json writes the document beside
        live = live + "JSON written to\n"
    assert main(["report", str(saved), "--html", str(tmp_path / "again.html")]) == 0
    again = capsys.readouterr().out
    assert again.strip(), kind
    assert again == _shown(live)
    if kind != "lint":
        assert (tmp_path / "again.html").read_text() == live_html.read_text()
