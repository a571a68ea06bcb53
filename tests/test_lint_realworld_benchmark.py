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


def test_present_scores_the_projects_whose_files_are_here(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files, path = write(tmp_path, [{"line": 10, "code": "PIT501", "kind": "must", "note": "user path"}])
    absent = manifest([])[0] | {"repo": "someone/gone", "name": "gone"}
    path.write_text(json.dumps([*json.loads(path.read_text()), absent]), encoding="utf-8")
    assert lr.main(["--files", str(files), "--manifest", str(path)]) == 0
    assert "skipped" in capsys.readouterr().out  # without --present: nothing scored
    assert lr.main(["--files", str(files), "--manifest", str(path), "--present"]) == 0
    out = capsys.readouterr().out
    assert "scoring the 1 of 2 projects" in out and "1 projects, 1 files, 1 must" in out
    assert next(r for r in out.splitlines() if r.startswith("PIT501")).split()[1:4] == ["1.00", "1.00", "1"]


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


def test_pooled_judgments_of_unlabelled_findings_are_blind_and_reported_beside_the_first_labels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """lint_pool.py: a held-out project's findings on lines nobody labelled become pooled items,
    mixed with controls (lines already labelled with the code), written without the linter's
    message or which is which; the merge scores the assessor on the controls, adds the pooled
    judgments as labels, and lint_realworld prints the held-out part both with them and as first
    labelled."""
    from benchmarks import lint_pool

    labels = [{"line": 16, "code": "PIT201", "kind": "trap", "note": "the training forward"},
              {"line": 16, "code": "PIT109", "kind": "trap", "note": "trains in training mode"}]
    files, path = write(tmp_path, labels)
    held = manifest(labels)[0] | {"name": "tiny1"}  # sha256 "48:someone/tiny:tiny1" falls in the held-out part
    path.write_text(json.dumps([held]), encoding="utf-8")
    assert lr.held_out([held]) == {0}
    pool = tmp_path / "pool"
    assert lint_pool.main(["packet", str(pool), "--files", str(files), "--manifest", str(path)]) == 0
    assert "2 pooled items and 2 controls" in capsys.readouterr().out  # evaluate(): PIT109 and PIT201 at line 5
    items = json.loads((pool / "packet.json").read_text(encoding="utf-8"))["items"]
    assert all(set(x) == {"id", "project_folder", "file", "line", "code", "code_means", "project_files"}
               for x in items)  # nothing says which item is a finding
    key = json.loads((pool / "key.json").read_text(encoding="utf-8"))
    judged = {k: {"kind": "trap" if v["line"] == 16 else "must", "note": "read"} for k, v in key.items()}
    (pool / "judged.json").write_text(json.dumps({k: judged[k] for k in list(judged)[:3]}), encoding="utf-8")
    assert lint_pool.main(["merge", str(pool), "--manifest", str(path)]) == 2  # one item unjudged: nothing merged
    (pool / "judged.json").write_text(json.dumps(judged), encoding="utf-8")
    assert lint_pool.main(["merge", str(pool), "--manifest", str(path)]) == 0
    out = capsys.readouterr().out
    assert "agreed with the labels on 2 of 2" in out and "2 labels added" in out
    added = [lab for lab in json.loads(path.read_text(encoding="utf-8"))[0]["files"][0]["labels"]
             if lab.get("added") == "pooled-blind"]
    assert sorted((lab["line"], lab["code"], lab["kind"]) for lab in added) == [(5, "PIT109", "must"),
                                                                                 (5, "PIT201", "must")]
    result = tmp_path / "result.json"
    assert lr.main(["--files", str(files), "--manifest", str(path), "--json", str(result)]) == 0
    doc = json.loads(result.read_text(encoding="utf-8"))
    assert "held-out part as first labelled (the 2 blind pooled judgments" in capsys.readouterr().out
    assert doc["held_out"]["codes"]["PIT201"]["tp"] == 1 and doc["held_out"]["codes"]["PIT201"]["fp"] == 0
    first = doc["held_out_as_first_labelled"]["codes"]["PIT201"]
    assert (first["tp"], first["fp"]) == (0, 1) and "false_positives" not in first


def test_pooling_with_present_skips_held_out_projects_whose_files_are_absent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """lint_pool.py packet: refuses in one line while corpus files are absent; with --present it pools
    the held-out projects that are all here and names items by their index in the whole manifest."""
    from benchmarks import lint_pool

    labels = [{"line": 16, "code": "PIT201", "kind": "trap", "note": "the training forward"}]
    files, path = write(tmp_path, labels)
    absent = manifest(labels)[0] | {"name": "tiny9", "files": [{"path": "gone.py", "labels": labels}]}
    held = manifest(labels)[0] | {"name": "tiny1"}
    path.write_text(json.dumps([absent, held]), encoding="utf-8")
    assert lr.held_out([absent, held]) == {0, 1}
    pool = tmp_path / "pool"
    assert lint_pool.main(["packet", str(pool), "--files", str(files), "--manifest", str(path)]) == 0
    assert "corpus files absent" in capsys.readouterr().out and not pool.exists()
    assert lint_pool.main(["packet", str(pool), "--files", str(files), "--manifest", str(path), "--present"]) == 0
    # evaluate()'s PIT109 and PIT201 at line 5; only PIT201 has a labelled line to serve as a control
    assert "2 pooled items and 1 controls" in capsys.readouterr().out
    key = json.loads((pool / "key.json").read_text(encoding="utf-8"))
    assert {v["project"] for v in key.values()} == {1}
