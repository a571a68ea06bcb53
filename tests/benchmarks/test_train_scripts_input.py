"""benchmarks/train_scripts_input.py (issue 44): the hand-set DataLoader copies and the whole-process
targets, as units (the benchmark itself runs real scripts for minutes: `make bench`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import train_scripts_input as inputs

ENTRY = {"name": "toy", "input_bound": True, "loader": {"file": "train.py", "call": "DataLoader(ds, batch_size=8)"}}


def test_the_hand_set_loader_gets_workers_and_persistent_workers(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("loader = DataLoader(ds, batch_size=8)\nfor x in loader: pass\n")
    inputs.hand_loader(ENTRY, tmp_path, 2)
    assert "DataLoader(ds, batch_size=8, num_workers=2, persistent_workers=True)" in (tmp_path / "train.py").read_text()


def test_a_keyword_the_call_has_is_replaced_and_a_changed_file_stops(tmp_path: Path) -> None:
    entry = {**ENTRY, "loader": {"file": "train.py", "call": "DataLoader(ds, num_workers=args.workers, shuffle=True)"}}
    (tmp_path / "train.py").write_text("dl = DataLoader(ds, num_workers=args.workers, shuffle=True)\n")
    inputs.hand_loader(entry, tmp_path, 4)
    assert "DataLoader(ds, num_workers=4, shuffle=True, persistent_workers=True)" in (tmp_path / "train.py").read_text()
    with pytest.raises(SystemExit, match="expected exactly once"):
        inputs.hand_loader(entry, tmp_path, 4)  # the call is no longer the recorded text


def _result(name: str, original: float, patched: float, hands: dict[str, float], share: float | None) -> dict:
    measured = {"original": {"wall_s": original}, "quiet": {"wall_s": patched},
                **{k: {"wall_s": v} for k, v in hands.items()}}
    wait = {"naive": {"share": share}} if share is not None else None
    return {"name": name, "measured": measured, "searches": [{"tag": "quiet", "input_wait": wait}]}


def line(name: str, ok: bool, detail: str) -> str:
    return f"{'met' if ok else 'NOT met'} {name}: {detail}"


def test_the_targets_are_judged_on_whole_processes() -> None:
    results = [_result("aug", 60.0, 30.0, {"workers1": 45.0, "workers2": 29.0, "workers4": 31.0}, 0.7),
               _result("gpt", 40.0, 42.0, {}, 0.02)]  # a compute-bound script made slower: 0.95x whole
    text = "\n".join(inputs.targets(results, line))
    assert "met within 5% of the best hand-set DataLoader" in text and "aug 0.97 (best by hand: workers2)" in text
    assert "met >= 1.3x where the original waits" in text and "aug 2.00x (waits 70%)" in text
    assert "NOT met never slower than 0.97x" in text and "gpt 0.95x" in text


def test_a_patch_slower_than_a_hand_set_loader_is_not_met() -> None:
    text = "\n".join(inputs.targets([_result("aug", 60.0, 40.0, {"workers2": 30.0}, 0.6)], line))
    assert "NOT met within 5% of the best hand-set DataLoader" in text and "aug 0.75" in text
