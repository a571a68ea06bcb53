"""Issue 18 item 13: bad input is one line and exit 2, never "internal error" or a traceback;
NaN and inf options are refused up front."""

import json

import pytest
from reliability_helpers import QUICK, F, cli, one_line_error

M = f"{F}:build"
IN = ["--input", "float32[B,8]"]


@pytest.mark.parametrize(("args", "needle"), [
    (["memory", "zoo:mlp", "--budget", "inf"], "--budget"),
    (["memory", "zoo:mlp", "--budget", "nan%"], "--budget"),
    (["memory", M, "--input", "float32[B,7]", "--batch-size", "2"], "the first forward on float32[2,7] failed"),
    (["bench", M, *IN, "--budget-s", "inf"], "--budget-s: expected a finite positive number"),
    (["bench", M, *IN, "--timeout-s", "nan"], "--timeout-s: expected a finite positive number"),
    (["bench", M, *IN, "--seed", "1e20"], "--seed: expected an integer seed"),
    (["bench", M, *IN, "--seed", str(10**30)], "--seed: expected a seed in 0 .. 2**63-1"),
    (["optimize", M, *IN, "--time-budget-s", "inf"], "--time-budget-s: expected a finite positive number"),
    (["optimize", M, *IN, "--tolerance", "nan"], "--tolerance"),
    (["compare", "a.json", "b.json", "--threshold", "nan"], "--threshold"),
    (["bench", M, "--input", "float32[B,99999999999999]", *QUICK], "--input: cannot allocate"),
])
def test_bad_option_is_one_line(capsys, args, needle):
    code, _, err = cli(capsys, *args)
    assert code == 2 and needle in one_line_error(err)


def test_gradcheck_json_to_a_directory_is_refused_before_the_check(capsys, tmp_path):
    code, _, err = cli(capsys, "gradcheck", "tests/fixtures/models.py:stable_lse", "--input", "float64[3,4]",
                       "--json", str(tmp_path))
    assert code == 2 and "--json: " in one_line_error(err) and "is a directory" in err
    assert list(tmp_path.iterdir()) == []  # no temp file left behind


DOCS = {
    "missing fields": {"kind": "bench", "results": [{"variant": "a"}]},
    "mistyped batch": {"kind": "bench", "results": [{"variant": "a", "batch_size": "2", "status": "ok"}]},
    "results not a list": {"kind": "optimize", "results": 5},
    "a list": [1, 2],
    "bad latency": {"kind": "bench", "results": [{"variant": "a", "batch_size": 2, "status": "ok",
                                                  "latency_ms": {"median": "fast"}}]},
}


@pytest.mark.parametrize("command", ["compare", "report"])
@pytest.mark.parametrize("case", [*DOCS, "nan samples", "deep"])
def test_a_malformed_document_is_one_line(capsys, tmp_path, good_json, command, case):
    path = tmp_path / "doc.json"
    if case == "nan samples":
        path.write_text('{"kind": "bench", "results": [{"variant": "a", "batch_size": 1, "status": "ok", '
                        '"samples_ms": [NaN, 1.0]}]}')
    elif case == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path.write_text(json.dumps(DOCS[case]))
    args = [str(path), str(good_json)] if command == "compare" else [str(path), "--html", str(tmp_path / "r.html")]
    code, _, err = cli(capsys, command, *args)
    assert code == 2 and str(path) in one_line_error(err)
