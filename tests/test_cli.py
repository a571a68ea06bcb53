"""The CLI as a user runs it: a subprocess, real exit codes, one-line errors."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from pitstop.schemas import BENCH_SCHEMA
from tests.fixtures.procs import worker_pids

FAST = ["--budget-s", "0.3", "--threads", "1", "--replicas", "1"]
M = "tests/fixtures/models.py"


def pitstop(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "pitstop.cli", *args], capture_output=True, text=True,
                          timeout=300, **kwargs)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["zoo:resnet9"], "unknown zoo model 'resnet9'; valid: bert-base, cnn, gpt2, gpt2-tiny, llama-tiny, mlp, "
                          "qwen2-tiny, resnet50, transformer"),
        (["missing.py:build"], "file 'missing.py' does not exist"),
        ([f"{M}:nope"], "has no attribute 'nope'"),
        ([f"{M}:factory_raises"], "the factory raised ValueError: bad hyper-parameter: depth=-1"),
        ([f"{M}:not_a_module"], "returned int, expected an nn.Module"),
        ([f"{M}:tiny", "--input", "flot32[B,16]"], "expected a dtype like float32 or int64, got 'flot32'"),
        ([f"{M}:tiny"], "--input: model tests/fixtures/models.py:tiny returns no example inputs; give an input spec"),
        # one variant: the first forward runs in each variant's worker, one worker is enough to fail it
        ([f"{M}:shape_mismatch", "--variants", "eval+no_grad"],
         "the first forward on float32[2,15] failed: RuntimeError: mat1 and mat2"),
        (["zoo:mlp", "--batch-sizes", "0,2"], "expected positive integers"),
        (["zoo:mlp", "--variants", "eval+fast"], "--variants: cannot read 'eval+fast'"),
        (["zoo:mlp", "--budget-s", "-1"], "expected a positive number"),
        (["zoo:mlp", "--device", "tpu"], "--device: expected cpu, cuda or auto"),
        (["zoo:mlp", "--json", "/proc/no/out.json"], "--json: cannot write '/proc/no/out.json'"),
        (["zoo:mlp", "--json", "tests"], "--json: 'tests' is a directory"),
        (["zoo:mlp", "--html", "tests"], "--html: 'tests' is a directory; give a file name such as out.html"),
        (["zoo:mlp", "--target", "2"], "--target: must be in (0, 1), got 2.0"),  # a settings field, named by its flag
        (["zoo:mlp", "--worker-env", "NOEQUALS"], "--worker-env: expected KEY=VALUE, got 'NOEQUALS'"),
        ([], "the following arguments are required: model"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle, capsys):
    """In-process: the check and its message are logic; the real process's exit code is proved just below."""
    from pitstop.cli import main

    try:
        code = main(["bench", *args])
    except SystemExit as exc:  # argparse's own errors leave through sys.exit
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize(("args", "needle"), [
    (["zoo:resnet9"], "unknown zoo model 'resnet9'"),  # pitstop's own usage error
    ([], "the following arguments are required: model"),  # argparse's
])
def test_bad_input_exits_2_from_a_real_process(args, needle):
    """A process: what a shell sees, the exit status of `python -m pitstop.cli` and nothing but one line."""
    proc = pitstop("bench", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def _in_process(argv, capsys):
    """``main(argv)``'s exit code and stdout; argparse's --help and --version leave through sys.exit."""
    from pitstop.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().out


def test_help_teaches(capsys):
    """In-process: the texts are logic (test_install runs the installed `pitstop --version` for real)."""
    code, out = _in_process(["bench", "--help"], capsys)
    assert code == 0
    for needle in ("zoo:NAME", "float32[B,3,224,224]", "--budget-s", "within noise", "Exit codes"):
        assert needle in out
    code, out = _in_process(["--version"], capsys)
    assert code == 0 and out.startswith("pitstop ")
    assert _in_process([], capsys)[0] == 2


def test_bench_json_to_stdout_and_table_to_stderr():
    proc = pitstop("bench", f"{M}:tiny", "--input", "float32[B,16]", "--batch-sizes", "2",
                   "--variants", "train+grad,eval+no_grad", "--json", "-", *FAST)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, BENCH_SCHEMA)
    assert [r["variant"] for r in doc["results"]] == ["train+grad", "eval+no_grad"]
    assert "eval+no_grad" in proc.stderr and doc["advice"][:40] in proc.stderr


def test_ctrl_c_keeps_finished_results_and_prints_the_partial_table(tmp_path):
    """A process: only a real SIGINT to a real CLI proves the exit code and the partial JSON written on Ctrl-C."""
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pitstop.cli", "bench", f"{M}:tiny", "--input", "float32[B,16]",
         "--batch-sizes", "1,2,4,8", "--variants", "eval+no_grad,eval+inference_mode", "--budget-s", "0.3",
         "--target", "0.0001", "--threads", "1", "--replicas", "1", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a child inherits an ignored SIGINT, and Python then leaves it ignored: start from the default, as a
        # shell does (in a full run some earlier test leaves SIGINT ignored in this process)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # the first batch size has finished (its rows are written), then a second one's worker is up: the
    # interrupt lands inside group 2, with groups 3 and 4 still to come, so the run cannot be complete
    _poll(out.exists, proc)
    first_group = set(_children(proc.pid))
    _poll(lambda: bool(set(_children(proc.pid)) - first_group), proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, BENCH_SCHEMA)
    assert doc["interrupted"] and not doc["complete"]
    first = [r for r in doc["results"] if r["batch_size"] == 1]
    assert len(first) == 2 and all(r["status"] == "ok" for r in first)
    assert "interrupted: the results above are partial" in stdout
    assert "Traceback" not in stderr


def _poll(condition, proc, timeout_s: float = 120.0) -> None:
    """Wait for ``condition()`` with a deadline; a run that ends first fails the test with its stderr."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) first: {proc.stderr.read()}")
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    """Live bench workers of ``pid`` (its ``pitstop.bench.worker`` children, or forks of its fork server)."""
    return worker_pids(pid, "pitstop.bench.worker")


def test_no_worker_left_behind_after_a_run():
    """A process: only a real CLI run whose worker hangs and is timed out can leave an orphan behind."""
    tag = f"pitstop-test-{os.getpid()}-{time.monotonic_ns()}"  # marks this run's workers, not other tests'
    proc = pitstop("bench", f"{M}:hang_in_inference", "--timeout-s", "3", "--variants",
                   "eval+no_grad,eval+inference_mode", "--worker-env", f"PITSTOP_TEST_TAG={tag}", *FAST)
    assert "timed out after 3 s" in proc.stderr + proc.stdout, proc.stderr  # the hang really was cut short
    assert _tagged(tag) == []


def _tagged(tag: str) -> list[int]:
    """Processes whose environment holds ``tag``: this run's workers, if any outlived it."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found += [int(pid)] if tag.encode() in Path(f"/proc/{pid}/environ").read_bytes() else []
            except OSError:
                pass
    return found


def test_progress_bar_on_a_terminal_follows_the_run():
    import io

    from rich.console import Console

    import pitstop as ps
    from pitstop.cli._output import _progress

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    with _progress(console) as on_event:
        assert on_event is not None  # a terminal gets a bar
        result = ps.bench(f"{M}:tiny", "float32[B,16]", batch_sizes=[2], variants=["eval+no_grad"], budget_s=0.3,
                          threads=1, replicas=2, on_event=on_event)
    assert result.complete
    shown = buffer.getvalue()
    assert "round" in shown and "widest interval" in shown and "target ±2%" in shown


def test_no_progress_bar_in_a_pipe():
    import io

    from rich.console import Console

    from pitstop.cli._output import _progress

    with _progress(Console(file=io.StringIO())) as on_event:
        assert on_event is None


OPT_FAST = ["--threads", "1", "--replicas", "1", "--time-budget-s", "10"]  # the minimum


@pytest.mark.parametrize(("args", "needle"), [
    (["zoo:mlp", "--objective", "fast"], "argument --objective: invalid choice: 'fast'"),
    (["zoo:mlp", "--techniques", "precision,magic"], "--techniques: unknown magic"),
    (["zoo:mlp", "--time-budget-s", "3"], "--time-budget-s: must be at least 10 s, got 3"),  # a field's error, by flag
    (["zoo:mlp", "--save", M], f"--save: '{M}' is a file"),
    (["zoo:nope"], "unknown zoo model 'nope'"),
])
def test_optimize_bad_input_is_one_line_exit_2(args, needle, capsys):
    """In-process, as the bench ones (test_bad_input_exits_2_from_a_real_process proves a real exit code)."""
    from pitstop.cli import main

    try:
        code = main(["optimize", *args])
    except SystemExit as exc:  # argparse's own errors (an invalid choice) leave through sys.exit
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_optimize_help_teaches_the_search_and_the_gate(capsys):
    out = _in_process(["optimize", "--help"], capsys)[1]
    for needle in ("--objective", "--latency-budget-ms", "--save DIR", "argmax agreement", "interval excludes 1"):
        assert needle in out


def test_optimize_end_to_end_json_to_stdout_and_report_to_stderr(tmp_path):
    proc = pitstop("optimize", f"{M}:tiny", "--input", "float32[B,16]", "--techniques", "precision,threads",
                   "--json", "-", "--save", str(tmp_path / "out"), *OPT_FAST)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, BENCH_SCHEMA)
    assert doc["kind"] == "optimize" and doc["results"] and doc["winner"]["recipe"].startswith('"""pitstop recipe')
    assert "Winner:" in proc.stderr and "fp16 autocast needs CUDA" in proc.stderr
    assert (tmp_path / "out" / "recipe.py").read_text() == doc["winner"]["recipe"]


def test_zoo_extra_missing_names_the_pip_command():
    code = ("import sys; sys.modules['transformers'] = None\n"
            "from pitstop.cli import main\n"
            "sys.exit(main(['optimize', 'zoo:bert-base', '--time-budget-s', '10']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert 'zoo:bert-base' in proc.stderr and 'pip install "pitstop[zoo]"' in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_parser_knows_the_search_axes_without_importing_torch():
    import subprocess
    import sys

    from pitstop.cli.optimize import SEARCH_AXES
    from pitstop.optimize.search import AXES

    assert SEARCH_AXES == AXES
    code = "import sys; from pitstop.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("command", [
    ["bench", "zoo:mlp"], ["optimize", "zoo:mlp"], ["memory", "zoo:mlp"], ["compare", "a.json", "b.json"],
])
def test_json_and_html_paths_are_checked_before_the_run(command, capsys):
    from pitstop.cli import main

    for flag in ("--json", "--html"):
        assert main([*command, flag, "tests"]) == 2  # a directory: refused at once, nothing measured
        err = capsys.readouterr().err
        assert f"{flag}: 'tests' is a directory" in err and len(err.strip().splitlines()) == 1


def test_json_to_stdout_puts_the_console_on_stderr(capsys):
    from pitstop.cli import main

    assert main(["gradcheck", f"{M}:stable_lse", "--input", "float64[3,4]", "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["function"] == f"{M}:stable_lse"
    assert "gradients OK" in err


LONG = "/tmp/" + "z" * 300  # longer than any file name a Linux file system takes (255 bytes)


@pytest.mark.parametrize("argv", [
    ["profile", f"{LONG}.py"], ["doctor", f"{LONG}.py"], ["train", f"{LONG}.py"], ["lint", f"{LONG}.py"],
    ["bench", f"{LONG}.py:build"], ["optimize", f"{LONG}.py:build"], ["memory", f"{LONG}.py:build"],
    ["report", f"{LONG}.json"], ["compare", f"{LONG}.json", f"{LONG}.json"], ["train", "zoo:mlp", "--save", LONG],
    ["profile", "--html", f"{LONG}.html", "t.py"], ["profile", "--trace", LONG, "t.py"],
])
def test_a_path_too_long_is_one_line_exit_2(argv, capsys, tmp_path):
    """Found by the property tests on a clean clone: stat() of a name over 255 bytes raises
    ENAMETOOLONG, which was an internal error (exit 3) in every command that looks at a path."""
    from pitstop.cli import main

    script = tmp_path / "t.py"
    script.write_text("raise SystemExit('the script must not run')\n")
    assert main([str(script) if a == "t.py" else a for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pitstop: error: ") and "File name too long" in err and len(err.strip().splitlines()) == 1
