"""benchmarks/lint_realworld.py: the corpus scorer skips cleanly without files, and scores a small
hand-labelled project (written here) with the real linter: must/optional/trap matching, statement
spans, ``also`` lines, the def-header rule for PIT201, duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import lint_realworld as lr

TRAIN = '''import torch
from torch.utils.data import DataLoader


def evaluate(model, x):
    return model(x)


def main(model, data, opt, ckpt):
    state = torch.load(ckpt)
    model.load_state_dict(state)
    loader = DataLoader(data, batch_size=8, num_workers=4, pin_memory=True)
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    print(evaluate(model, x))
'''


def manifest(labels: list[dict]) -> list[dict]:
    return [{"repo": "someone/tiny", "commit": "0" * 40, "name": "tiny", "context": [],
             "files": [{"path": "train.py", "labels": labels}]}]


def write(tmp_path: Path, labels: list[dict]) -> tuple[Path, Path]:
    files = tmp_path / "corpus"
    (files / "someone+tiny").mkdir(parents=True)
    (files / "someone+tiny" / "train.py").write_text(TRAIN, encoding="utf-8")
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest(labels)), encoding="utf-8")
    return files, path


def test_absent_files_print_one_line_and_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, path = write(tmp_path, [])
    assert lr.main(["--files", str(tmp_path / "nowhere"), "--manifest", str(path)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "absent" in out[0] and "skipped" in out[0]


def test_scores_a_labelled_project_with_the_real_linter(tmp_path: Path) -> None:
    labels = [
        {"line": 10, "code": "PIT501", "kind": "must", "note": "torch.load, torch version unknown"},
        {"line": 12, "code": "PIT401", "kind": "trap", "note": "workers and pinning set"},
        {"line": 17, "code": "PIT101", "kind": "trap", "note": "zeroed every step"},
        {"line": 6, "code": "PIT602", "kind": "must", "note": "a must nothing can find: counted as FN"},
    ]
    files, path = write(tmp_path, labels)
    out = tmp_path / "result.json"
    assert lr.main(["--files", str(files), "--manifest", str(path), "--json", str(out)]) == 0
    codes = json.loads(out.read_text(encoding="utf-8"))["codes"]
    assert (codes["PIT501"]["tp"], codes["PIT501"]["fn"]) == (1, 0)
    assert codes["PIT602"]["fn"] == 1 and codes["PIT602"]["recall"] == 0.0
    assert codes["PIT401"]["fp"] == 0 and codes["PIT101"]["fp"] == 0  # the traps hold on this file


def test_matching_rules(tmp_path: Path) -> None:
    tree = lr.parse(TRAIN)
    spans = lr.statement_lines(tree)
    assert spans[12] == frozenset({12})  # a simple statement
    assert spans[13] == frozenset({13})  # a for loop: its header only, not its body
    assert lr.enclosing_def(tree, 6) == frozenset({5})
    must = lr.Label("tiny", "train.py", 6, "PIT201", "must", "", frozenset({6, 5}))
    trap = lr.Label("tiny", "train.py", 12, "PIT401", "trap", "", frozenset({12}))
    tallies = {code: lr.Tally() for code in lr.SCORED}
    findings = [("train.py", 5, "PIT201"), ("train.py", 6, "PIT201"),  # the def header, then a duplicate
                ("train.py", 12, "PIT401"), ("train.py", 15, "PIT401")]  # on a trap, on nothing
    lr.score([must, trap], findings, tallies)
    assert (tallies["PIT201"].tp, tallies["PIT201"].fp, tallies["PIT201"].fn) == (1, 0, 0)
    assert tallies["PIT401"].fp == 2 and "trap" in tallies["PIT401"].fps[0]
    assert tallies["PIT201"].precision() == 1.0 and tallies["PIT401"].precision() == 0.0


def test_the_committed_manifest_is_well_formed() -> None:
    projects = json.loads(lr.MANIFEST.read_text(encoding="utf-8"))
    assert sum(len(p["files"]) for p in projects) >= 60
    for p in projects:
        assert len(p["commit"]) == 40 and "/" in p["repo"]
        for f in p["files"]:
            for lab in f["labels"]:
                assert lab["code"] in lr.SCORED and lab["kind"] in ("must", "optional", "trap")
                assert lab["line"] >= 1 and lab["note"]


def test_projects_added_after_tuning_are_scored_on_their_own(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    labels = [{"line": 10, "code": "PIT501", "kind": "must", "note": "torch.load, torch version unknown"}]
    files, path = write(tmp_path, labels)
    late = manifest(labels)[0] | {"name": "tiny-late", "added": "after-tuning"}
    path.write_text(json.dumps([*manifest(labels), late]), encoding="utf-8")
    out = tmp_path / "result.json"
    assert lr.main(["--files", str(files), "--manifest", str(path), "--json", str(out)]) == 0
    assert "added after the rules were tuned on the older corpus (1 projects; 1 must labels)" in capsys.readouterr().out
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["codes"]["PIT501"]["tp"] == 2 and result["added_after_tuning"]["codes"]["PIT501"]["tp"] == 1


def test_lint_speed_says_in_one_line_when_torchfix_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import lint_speed

    monkeypatch.setattr(lint_speed.shutil, "which", lambda name: None)
    monkeypatch.setattr(lint_speed.sys, "executable", "/nonexistent/bin/python")
    assert lint_speed.find_torchfix() is None
