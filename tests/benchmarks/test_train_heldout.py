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
