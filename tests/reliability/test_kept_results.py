"""Issue 18 items 1, 3 and 14: a failed run never replaces a good result; a spec without B runs
only at its own batch; output paths are checked before the run."""

import json

import pytest
from reliability_helpers import QUICK, F, cli, one_line_error

from pitstop._io import ResultFile


@pytest.mark.parametrize(("args", "needle"), [
    (["bench", f"{F}:build", "--input", "float32[B,7]", *QUICK], "the first forward on float32[2,7] failed"),
    (["bench", f"{F}:build", "--input", "float32[B,8]", *QUICK, "--budget-s", "nan"], "--budget-s"),
    (["bench", f"{F}:build", "--input", "float32[B,100000000000000]", *QUICK], "cannot allocate"),
    (["optimize", f"{F}:build", "--input", "float32[B,7]", "--time-budget-s", "10"], "first forward"),
])
def test_a_failed_run_keeps_the_good_result(capsys, result_file, args, needle):
    before = result_file.read_bytes()
    code, _, err = cli(capsys, *args, "--json", str(result_file))
    assert code == 2 and needle in one_line_error(err)
    assert result_file.read_bytes() == before  # not replaced by an empty document


def test_a_result_file_keeps_a_file_for_an_empty_run(tmp_path):
    path = tmp_path / "r.json"
    assert ResultFile(path).write({"kind": "bench", "results": []}) == path  # nothing there yet: written
    path.write_text(json.dumps({"kind": "bench", "results": [{"variant": "a"}]}))
    assert ResultFile(path).write({"kind": "bench", "results": []}) is None
    assert json.loads(path.read_text())["results"] == [{"variant": "a"}]
    assert ResultFile(path).write({"kind": "bench", "results": [{"variant": "b"}]}) == path  # something to put there


def test_a_spec_without_b_runs_at_its_own_batch_only(capsys, tmp_path):
    out = tmp_path / "fixed.json"
    code, _, err = cli(capsys, "bench", f"{F}:build", "--input", "float32[4,8]", "--variants", "eval+no_grad",
                       "--budget-s", "0.1", "--replicas", "1", "--json", str(out))
    assert code == 0, err
    rows = json.loads(out.read_text())["results"]
    assert {r["batch_size"] for r in rows} == {4}  # not the 1 and 8 that never ran
    code, _, err = cli(capsys, "bench", f"{F}:build", "--input", "float32[4,8]", "--batch-sizes", "1,8")
    assert code == 2 and "has no B, so its batch is always 4, not 1" in one_line_error(err)


@pytest.mark.parametrize("flag", ["--json", "--html"])
def test_output_paths_are_checked_before_the_run(capsys, tmp_path, flag):
    code, _, err = cli(capsys, "bench", f"{F}:exits_in_eval", "--input", "float32[B,8]", *QUICK, flag, str(tmp_path))
    assert code == 2 and f"{flag}: " in one_line_error(err) and "is a directory" in err  # not the model's failure
