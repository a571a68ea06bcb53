"""`pitstop compare` as a CI gate never passes on nothing: results of kinds that time different
things are refused (exit 2), a comparison that matched nothing exits 1 saying why, and a side that
was interrupted is named."""

import json
from pathlib import Path

import pytest
from reliability_helpers import QUICK, F, cli, one_line_error

from pitstop.cli import main


@pytest.fixture(scope="module")
def all_failed_json(tmp_path_factory) -> Path:
    """A real bench result whose only variant crashed: no measured row."""
    path = tmp_path_factory.mktemp("failed") / "failed.json"
    main(["bench", f"{F}:crash_in_one_variant", "--input", "float32[B,8]", "--variants", "eval+inference_mode",
          *QUICK, "--json", str(path)])
    assert not [r for r in json.loads(path.read_text())["results"] if r["status"] == "ok"]
    return path


def _derived(good_json: Path, tmp_path: Path, name: str, change) -> str:
    """A copy of the real good result, edited by ``change(doc)``."""
    doc = json.loads(good_json.read_text())
    change(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _as_kind(kind: str):
    def change(doc):
        doc["kind"] = kind
    return change


def test_results_of_kinds_that_time_different_things_are_refused(capsys, tmp_path, good_json):
    train = _derived(good_json, tmp_path, "train.json", _as_kind("train"))
    code, _, err = cli(capsys, "compare", train, str(good_json))
    line = one_line_error(err)
    assert code == 2 and line.startswith("pitstop: error: cannot compare")
    assert "(a train result" in line and "(a bench result" in line
    assert "compare bench or optimize results with each other, train results with train results" in line
    optimize = _derived(good_json, tmp_path, "optimize.json", _as_kind("optimize"))  # the same rows: comparable
    code, out, _ = cli(capsys, "compare", str(good_json), optimize)
    assert code == 0 and "no regression" in out


@pytest.mark.parametrize("failed_first", [False, True])
def test_a_side_with_no_measured_rows_is_nothing_compared(capsys, good_json, all_failed_json, failed_first):
    pair = [str(all_failed_json), str(good_json)] if failed_first else [str(good_json), str(all_failed_json)]
    code, out, _ = cli(capsys, "compare", *pair)
    last = out.strip().splitlines()[-1]
    assert code == 1 and "no regression" not in out
    assert last == (f"nothing compared: {str(all_failed_json)!r} has no measured rows "
                    "(every row failed, was rejected or skipped); no verdict")


def test_a_run_interrupted_before_any_result_is_nothing_compared(capsys, tmp_path, good_json):
    def interrupted(doc):
        doc["complete"], doc["interrupted"] = False, True
        for row in doc["results"]:  # what bench writes for a variant stopped before its first timed call
            row.update(status="failed", reason="interrupted before any timed call", samples_ms=[],
                       samples_by_replica_ms=[], latency_ms=None)
    after = _derived(good_json, tmp_path, "interrupted.json", interrupted)
    code, out, _ = cli(capsys, "compare", str(good_json), after)
    assert code == 1 and "no regression" not in out
    assert f"warning: compared on partial results: {after!r} was interrupted" in out
    assert out.strip().endswith(f"nothing compared: {after!r} has no measured rows "
                                "(interrupted before any result); no verdict")


def test_no_variant_in_both_is_nothing_compared(capsys, tmp_path, good_json):
    def other_batch(doc):
        for row in doc["results"]:
            row["batch_size"] = 64
    after = _derived(good_json, tmp_path, "b64.json", other_batch)
    code, out, _ = cli(capsys, "compare", str(good_json), after, "--json", "-")
    doc = json.loads(out)
    assert code == 1 and doc["changes"] == [] and doc["regressions"] == 0
    assert doc["nothing_compared"].startswith("no variant at the same batch size is in both files (")
    page = tmp_path / "c.html"
    assert main(["compare", str(good_json), after, "--html", str(page)]) == 1
    assert "nothing compared: no variant at the same batch size" in capsys.readouterr().out
    assert "nothing compared: no variant at the same batch size" in page.read_text()


def test_partial_results_are_compared_and_named(capsys, tmp_path, good_json):
    def stopped(doc):
        doc["complete"], doc["interrupted"] = False, True
        doc["results"] = doc["results"][:1]  # the second variant never ran
    after = _derived(good_json, tmp_path, "partial.json", stopped)
    code, out, _ = cli(capsys, "compare", str(good_json), after, "--json", "-")
    assert json.loads(out)["partial"] == [f"{after!r} was interrupted"]
    code, out, _ = cli(capsys, "compare", str(good_json), after)
    assert f"warning: compared on partial results: {after!r} was interrupted" in out
    assert code == 0 and out.strip().endswith("no regression beyond 5%") and "only in" in out
