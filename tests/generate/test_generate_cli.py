"""``pitstop optimize MODEL --generate N`` end to end: one real search of a tiny GPT-2-style LM in
worker processes (module fixture, the smallest budget that runs every stage), read by every test:
prefill, decode and tokens/s in the JSON and the table, the token gate's verdicts, the other batch
size, the recipe run standalone (without pitstop) giving the reference's tokens, ``report`` and
``compare`` on the document. Only processes prove the worker pipeline and the standalone recipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import torch

pytest.importorskip("transformers")

from pitstop.schemas import BY_KIND

SRC = str(Path(__file__).parents[2] / "src")
NEW, P = 6, 12
ARGS = ["optimize", "zoo:gpt2-tiny", "--generate", str(NEW), "--prompt-len", str(P), "--batch-sizes", "1,2",
        "--techniques", "cache,attention,lookup", "--time-budget-s", "20", "--replicas", "1", "--threads", "1"]


def pitstop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pitstop", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=600)


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gen")
    proc = pitstop(*ARGS, "--json", "g.json", "--save", "out", cwd=tmp)
    return tmp, proc, json.loads((tmp / "g.json").read_text()) if (tmp / "g.json").exists() else None


def test_generation_is_measured_end_to_end(searched):
    _tmp, proc, doc = searched
    assert proc.returncode == 0, proc.stderr[-3000:]
    jsonschema.validate(doc, BY_KIND["generate"])
    assert next(s["name"] for s in doc["search"]["stages"]) == "probe" and doc["complete"]
    rows = {(r["variant"], r["stage"]): r for r in doc["results"]}
    ref = rows[("inference_mode", "probe")]
    lat, pre, dec = ref["latency_ms"]["median"], ref["prefill_ms"]["median"], ref["decode_ms_per_token"]["median"]
    # the stamped parts lie inside each whole call; medians of the parts need not add up to the median
    # call (0.68 of it beside the other xdist worker), but they never exceed it and cover most of it
    assert 0 < pre < lat and 0 < dec < lat and 0.5 * lat < pre + (NEW - 1) * dec < 1.15 * lat, (pre, dec, lat)
    assert ref["tokens_per_s"]["total"] == pytest.approx(NEW / (lat / 1e3))
    assert ref["decode_ms_per_token"]["n"] >= (NEW - 1) * len(ref["samples_ms"])  # every decode step stamped
    # the KV cache after a call: keys and values of 4 layers, 4 heads of 64, fp32, prompt + new - 1 positions
    assert ref["details"]["kv_cache_bytes"] == 2 * 4 * 1 * 4 * (P + NEW - 1) * 64 * 4
    for row in doc["results"]:  # every lossless variant that ran gave the reference's tokens on every prompt
        if row["status"] == "ok":
            assert row["fidelity"]["identical"] == row["fidelity"]["prompts"] >= 4, row
    assert {"static-cache", "eager-attention", "prompt-lookup"} <= {v for v, _ in rows}
    batch2 = [r for r in doc["results"] if r["batch_size"] == 2]
    assert batch2 and batch2[0]["variant"] == "inference_mode" and batch2[0]["tokens_per_s"]["total"] > 0
    if rows.get(("prompt-lookup", "batch 2")):
        assert "batch 1 only" in rows[("prompt-lookup", "batch 2")]["reason"]
    for text in ("prefill ms", "ms/token (p90)", "tokens/s", "4/4 same"):
        assert text in proc.stdout, text
    win = doc["winner"]
    if win["variant"] != "inference_mode":  # measured faster beyond noise in the final stage
        assert win["speedup"]["ci95"][0] > 1.0 and "Fastest with the same tokens" in proc.stdout
    else:
        assert "inference_mode stays" in proc.stdout


def test_the_recipe_runs_without_pitstop_and_gives_the_reference_tokens(searched):
    tmp, _proc, doc = searched
    recipe = tmp / "out" / "recipe.py"
    assert recipe.exists() and "def generate(model, input_ids, max_new_tokens)" in recipe.read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-I", str(recipe)], capture_output=True, text=True, cwd=tmp, env=env,
                         timeout=300)  # -I: not even the current folder on the path; pitstop is not importable
    assert run.returncode == 0, run.stderr[-2000:]
    tokens = json.loads(next(x for x in run.stdout.splitlines() if x.startswith("tokens:"))[len("tokens:"):])
    from pitstop.generate.session import generate_once
    from pitstop.generate.techniques import REFERENCE, apply
    from pitstop.models.spec import parse_model_spec

    model, _ = parse_model_spec("zoo:gpt2-tiny").build(None, seed=0)
    ids = torch.randint(0, doc["vocab"], (1, P), generator=torch.Generator().manual_seed(0))
    ref_model, kwargs = apply(REFERENCE, model)
    assert generate_once(ref_model, ids, NEW, kwargs)[0, P:].tolist() == tokens  # the measured tokens, again
    assert json.loads((tmp / "out" / "recipe.json").read_text())["winner"]["variant"] == doc["winner"]["variant"]


def test_report_and_compare_read_the_generate_document(searched, capsys, monkeypatch):
    """In-process: rendering and comparing are logic on the saved document (the run above was the process)."""
    from pitstop.cli import main

    tmp, _proc, _doc = searched
    monkeypatch.chdir(tmp)
    capsys.readouterr()
    assert main(["report", "g.json", "--html", "g.html"]) == 0
    assert "prefill ms" in capsys.readouterr().out and (tmp / "g.html").read_text().count("<tr>") > 3
    assert main(["compare", "g.json", "g.json", "--json", "c.json"]) == 0
    compared = json.loads((tmp / "c.json").read_text())
    assert {c["variant"] for c in compared["changes"]} >= {"inference_mode"}
    assert all(c["ratio"] == 1.0 for c in compared["changes"]) and compared["regressions"] == 0


@pytest.mark.parametrize("args,message", [
    (["--generate", "0"], "--generate: expected a positive"),
    (["--generate", "4", "--input", "int64[B,8]"], "--input does not apply with --generate"),
    (["--generate", "4", "--prompts", "missing.json"], "--prompts: missing.json: cannot read"),
    (["--prompt-len", "4", "--prompts", "p.json"], "--prompts goes with --generate"),
    (["--generate", "4", "--techniques", "warp"], "--techniques: unknown warp"),
])
def test_bad_generate_input_is_one_line_exit_2(args, message, tmp_path, capsys, monkeypatch):
    """In-process (the parser and the checks are logic; nothing is measured before they fail)."""
    from pitstop.cli import main

    monkeypatch.chdir(tmp_path)
    try:
        code = main(["optimize", "zoo:gpt2-tiny", *args])
    except SystemExit as exc:  # argparse's own type errors leave through sys.exit(2)
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_model_that_cannot_generate_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    from pitstop.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["optimize", "zoo:mlp", "--generate", "4"]) == 2
    err = capsys.readouterr().err
    assert "has no generate()" in err and len(err.strip().splitlines()) == 1, err
