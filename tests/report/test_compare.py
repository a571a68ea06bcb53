"""`pitstop compare`: noise-aware verdicts from raw samples, environment warnings, exit codes."""

import json
import zlib

import numpy as np
import pytest

from pitstop.cli import main
from pitstop.compare.api import compare
from pitstop.errors import UsageError


def result(tmp_path, name, rows, env=None):
    """A bench JSON with the given {variant: (median_ms, spread)} rows, 3 replicas of 40 calls each."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    results = []
    for variant, (ms, spread) in rows.items():
        groups = [list(ms * (1 + spread * rng.standard_normal(40))) for _ in range(3)]
        results.append({"variant": variant, "batch_size": 8, "status": "ok", "samples_by_replica_ms": groups,
                        "samples_ms": [t for g in groups for t in g]})
    doc = {"pitstop": "0.1.0", "schema": 1, "kind": "bench",
           "environment": env or {"torch": "2.13.0", "cpu": "EPYC", "threads": 2}, "results": results}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_clear_regression_pure_noise_and_an_improvement(tmp_path):
    before = result(tmp_path, "before", {"slow": (10.0, 0.01), "same": (10.0, 0.05), "fast": (10.0, 0.01)})
    after = result(tmp_path, "after", {"slow": (11.0, 0.01), "same": (10.0, 0.05), "fast": (8.0, 0.01)})
    c = compare(before, after)
    verdicts = {ch.variant: ch.verdict for ch in c.changes}
    assert verdicts == {"slow": "regression", "same": "within noise", "fast": "improvement"}
    slow = next(ch for ch in c.changes if ch.variant == "slow")
    assert slow.ratio == pytest.approx(1.1, rel=0.01) and slow.ci95[0] > 1.0
    assert [ch.variant for ch in c.regressions] == ["slow"]
    assert compare(before, after, threshold=0.2).regressions == []  # 10% is under a 20% threshold
    assert not c.env_warnings


def test_exit_codes_json_and_environment_warnings(tmp_path, capsys):
    before = result(tmp_path, "b", {"x": (10.0, 0.01), "gone": (5.0, 0.01)})
    after = result(tmp_path, "a", {"x": (12.0, 0.01), "new": (5.0, 0.01)},
                   env={"torch": "2.14.0", "cpu": "EPYC", "threads": 4})
    assert main(["compare", before, after]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "the environments differ: torch" in out and "threads: 2 vs 4" in out
    assert "only in" in out and "gone" in out and "new" in out
    assert main(["compare", before, after, "--json", "-"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "compare" and doc["regressions"] == 1
    same = result(tmp_path, "same", {"x": (10.0, 0.01)})
    assert main(["compare", before, same, "--html", str(tmp_path / "c.html")]) == 0
    assert "<svg" in (tmp_path / "c.html").read_text()


def test_bad_files_are_usage_errors(tmp_path, capsys):
    good = result(tmp_path, "g", {"x": (1.0, 0.01)})
    (tmp_path / "lint.json").write_text(json.dumps({"kind": "lint", "findings": []}))
    with pytest.raises(UsageError, match="not a pitstop bench"):
        compare(good, str(tmp_path / "lint.json"))
    assert main(["compare", good, str(tmp_path / "missing.json")]) == 2
    assert "not found" in capsys.readouterr().err
