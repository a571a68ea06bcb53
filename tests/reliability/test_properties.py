"""Property-based (hypothesis): generated option values, input specs and JSON documents fed to the
CLI in-process. Every outcome is exit 0, 1, 2 or 130 with no traceback, and an existing result file
is never replaced by a failed run (a successful one writes a document with results)."""

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_helpers import F, cli

FEW = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
INLINE = ["--inline", "--variants", "eval+no_grad", "--batch-sizes", "2", "--budget-s", "0.05", "--threads", "1"]
TRICKY = ["nan", "NaN", "inf", "-inf", "Infinity", "-1", "0", "-0", "1e308", "1e-308", "1e20", "", " ", "0x10",
          "1_000", "٣", "2**63", str(2**63), str(2**64), str(10**30), "1,2", "1,,2", "0,2", "3.5"]


def _value() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(TRICKY), st.floats().map(repr), st.integers(-2**70, 2**70).map(str),
                     st.text(max_size=6))


def _long_run(flag: str, value: str) -> bool:
    """Values that are valid and would only make the run long (a budget of 1e300 s): not this test's point."""
    try:
        number = float(value)
    except ValueError:
        return False
    return flag in ("--budget-s", "--timeout-s") and math.isfinite(number) and number > 2


def _midsize(value: str) -> bool:
    """Batch sizes large enough to allocate gigabytes but not absurd enough to be refused at once."""
    try:
        return any(64 < int(v) < 10**13 for v in value.split(",") if v.strip())
    except ValueError:
        return False


def _outcome(capsys, path, *args):
    before = path.read_bytes()
    code, out, err = cli(capsys, *args, "--json", str(path))
    assert code in (0, 1, 2, 130), err
    assert "Traceback" not in err + out and "internal error" not in err, err
    if code != 0:
        assert path.read_bytes() == before  # a failed run leaves the result as it was
    else:
        assert json.loads(path.read_text())["results"]  # replaced by something
        path.write_bytes(before)
    return code


@FEW
@given(flag=st.sampled_from(["--budget-s", "--target", "--timeout-s", "--seed", "--replicas", "--batch-sizes"]),
       value=_value())
def test_bench_options(capsys, result_file, flag, value):
    if _long_run(flag, value) or (flag == "--batch-sizes" and _midsize(value)):
        return
    _outcome(capsys, result_file, "bench", f"{F}:build", "--input", "float32[B,8]", *INLINE, f"{flag}={value}")


_DIM = st.one_of(st.sampled_from(["B", "b", "-1", "0", "x", "", "1.5", str(10**13), str(10**20)]),
                 st.integers(1, 16).map(str))
_TENSOR = st.builds(lambda dtype, dims, rng: f"{dtype}[{','.join(dims)}]{rng}",
                    st.sampled_from(["float32", "float64", "int64", "bool", "bfloat16", "uint8", "flot32", ""]),
                    st.lists(_DIM, max_size=4),
                    st.sampled_from(["", "{0,8}", "{5,2}", "{-3,3}", "{0,100000000000000000000}", "{a,b}", "{1}"]))


@FEW
@given(spec=st.lists(_TENSOR, min_size=1, max_size=2).map(";".join))
def test_input_specs(capsys, result_file, spec):
    _outcome(capsys, result_file, "bench", f"{F}:build", "--input", spec, *INLINE)


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**20), st.floats(allow_nan=False),
                    st.text(max_size=8))
_JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                          max_size=3), max_leaves=12)
_ROW = st.fixed_dictionaries({}, optional={
    "variant": st.one_of(st.sampled_from(["eval+no_grad", "eval+inference_mode"]), _SCALAR),
    "batch_size": st.one_of(st.sampled_from([2, 1]), _SCALAR),
    "status": st.one_of(st.sampled_from(["ok", "failed"]), _SCALAR),
    "samples_ms": st.one_of(st.lists(st.floats(0, 10), max_size=5), _JSON),
    "samples_by_replica_ms": st.one_of(st.lists(st.lists(st.floats(0, 10), max_size=4), max_size=2), _JSON),
    "latency_ms": _JSON, "config": _JSON, "fidelity": _JSON, "throughput_per_s": _SCALAR,
})
_DOC = st.one_of(_JSON, st.fixed_dictionaries(
    {"kind": st.sampled_from(["bench", "optimize", "doctor", "memory", "compare", "lint", "data", "train",
                              "profile", "x"])},
    optional={"results": st.one_of(st.lists(_ROW, max_size=3), _JSON), "environment": _JSON, "model": _SCALAR,
              "baseline": _SCALAR, "winner": _JSON, "findings": _JSON, "settings": _JSON, "advice": _SCALAR,
              "complete": _SCALAR, "interrupted": _SCALAR, "search": _JSON, "problem": _JSON, "steps": _SCALAR,
              "phases": _JSON, "step_ms": _JSON, "verdict": _JSON, "timeline": _JSON, "exit": _JSON,
              "syncs": _JSON, "top_ops": _JSON, "failed": _SCALAR}))


@FEW
@given(doc=_DOC)
def test_json_documents(capsys, good_json, tmp_path_factory, doc):
    folder = tmp_path_factory.mktemp("doc")
    path = folder / "doc.json"
    path.write_text(json.dumps(doc))
    for args in (["compare", str(path), str(good_json)], ["report", str(path), "--html", str(folder / "r.html")]):
        code, _, err = cli(capsys, *args)
        assert code in (0, 1, 2), err
        assert "Traceback" not in err and "internal error" not in err, err


TRAIN_FLAGS = ["--time-budget-s", "--timeout-s", "--seed", "--tolerance", "--weight-decay", "--lr", "--batch-size",
               "--batch-dim", "--trajectory-steps", "--steps", "--memory-budget-mb", "--replicas", "--target",
               "--input", "--optimizer", "--techniques", "--threads", "--save", "--html"]
_PATH = st.one_of(st.sampled_from(["a-file/out", "a-file", ".", "", " ", "x" * 300, "\x00", "s/../s", "[red]x[/red]",
                                   'x""";__import__("os").system("touch PWNED");""".py']), st.text(max_size=12))


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(flag=st.sampled_from(TRAIN_FLAGS), value=_value(), path=_PATH)
def test_train_options(capsys, result_file, tmp_path_factory, flag, value, path):
    """Any option value, output paths included: a one-line exit 2 (the model's first forward fails on
    purpose, after every option was checked: a valid value ends there, in its worker), never a
    traceback, the --json file kept, nothing written where --save or --html pointed."""
    import os

    folder = tmp_path_factory.mktemp("train-opts")
    (folder / "a-file").write_text("in the way")
    if flag in ("--save", "--html"):
        value = str(folder / path) if path and "\x00" not in path else path
    args = {"--input": "float32[B,8]", "--target": "int64[B]{0,4}", "--time-budget-s": "10", flag: value}
    argv = [x for k, v in args.items() for x in (k, v)]
    before = sorted(os.listdir(folder))
    code = _outcome(capsys, result_file, "train", "tests/reliability/train_faulty.py:first_forward_raises", *argv)
    assert code == 2
    assert sorted(os.listdir(folder)) == before and not (folder / "PWNED").exists()


PROFILE_FLAGS = ["--wait", "--active", "--timeout-s", "--html", "--trace"]
_SCRIPT = ("import torch\nm = torch.nn.Linear(4, 2)\no = torch.optim.SGD(m.parameters(), 0.1)\n"
           "for _ in range(4):\n    o.zero_grad(); m(torch.randn(8, 4)).sum().backward(); o.step()\n")


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))  # a process each
@given(flag=st.sampled_from(PROFILE_FLAGS), value=_value(), path=_PATH)
def test_profile_options(real_documents, tmp_path_factory, flag, value, path):
    """Any option value for profile, output paths included: exit 0 or a one-line exit 2, never a
    traceback; a good --json report is replaced only by a complete run's report."""
    import shutil
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("prof")
    (folder / "a-file").write_text("in the way")
    (folder / "t.py").write_text(_SCRIPT)
    good = shutil.copy(real_documents["profile"], folder / "p.json")
    before = Path(good).read_bytes()
    if flag in ("--html", "--trace"):
        value = str(folder / path) if path and "\x00" not in path else path
    if "\x00" in value:
        return  # no command line can carry a NUL byte (exec refuses it): nothing reaches pitstop
    if flag == "--timeout-s" and value.strip() in ("1e-308",):
        return  # valid, and stops the script before its first step: not this test's point
    proc = subprocess.run([sys.executable, "-m", "pitstop", "profile", "--json", str(folder / "p.json"),
                           f"{flag}={value}", "t.py"], capture_output=True, text=True, cwd=folder, timeout=120)
    assert proc.returncode in (0, 2, 124), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    doc = json.loads((folder / "p.json").read_text())
    if proc.returncode == 0:
        assert doc["kind"] == "profile" and doc["steps"] == 4
    else:
        assert Path(good).read_bytes() == before


def _mutated(doc: dict, draw: st.DrawFn) -> dict:
    """A real document with one part cut, replaced by arbitrary JSON or a wrong type."""
    import copy

    doc = copy.deepcopy(doc)
    node: object = doc
    for _ in range(draw(st.integers(0, 4))):
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        child = node[key]  # type: ignore[index]
        if not isinstance(child, dict | list) or not child:
            break
        node = child
    keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
    if keys:
        key = draw(st.sampled_from(keys))
        if isinstance(node, dict) and draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(_JSON)  # type: ignore[index]
    return doc


@st.composite
def _real_mutations(draw: st.DrawFn, docs: dict) -> dict:
    return _mutated(docs[draw(st.sampled_from(sorted(docs)))], draw)


def test_real_train_and_profile_documents_cut_and_mangled(capsys, real_documents, tmp_path_factory):
    """Real train and profile documents (and a bench one) with a part cut or replaced by any JSON:
    report and compare give their result or one line, exit 0, 1 or 2, never a traceback."""
    docs = {k: json.loads(Path(v).read_text()) for k, v in real_documents.items()}

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(doc=_real_mutations(docs))
    def check(doc):
        folder = tmp_path_factory.mktemp("mangled")
        path = folder / "doc.json"
        path.write_text(json.dumps(doc))
        other = real_documents.get(doc.get("kind")) if isinstance(doc.get("kind"), str) else None
        runs = [["report", str(path), "--html", str(folder / "r.html")]]
        if other is not None and doc.get("kind") in ("bench", "train"):
            runs.append(["compare", str(other), str(path)])
        for args in runs:
            code, _, err = cli(capsys, *args)
            assert code in (0, 1, 2), err
            assert "Traceback" not in err and "internal error" not in err, err

    check()
