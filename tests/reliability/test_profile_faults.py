"""Issue 26 for ``pitstop profile`` and ``pitstop doctor``: the script runs in a child process; its
outputs go where they were asked for (rows I, K, M), a run that measured nothing keeps a good
report, a script that exits hard still gets its report, and stdout stays JSON with ``--json -``.
The runs are real child processes: only they can chdir, exit hard, be killed or hang apart from pitstop."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pitstop.schemas import BY_KIND

SRC = str(Path(__file__).resolve().parents[2] / "src")
LOOP = """\
import os, sys, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
{before}
for step in range({steps}):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    {backward}
    opt.step()
    print("step", step, float(loss))
{after}
"""


def script(folder: Path, name: str = "train.py", *, steps: int = 30, before: str = "", after: str = "",
           backward: str = "loss.backward()") -> Path:
    path = folder / name
    path.write_text(LOOP.format(steps=steps, before=before, after=after, backward=backward))
    return path


def pitstop(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pitstop", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=300)


@pytest.fixture(scope="module")
def good_profile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("good-profile")
    script(folder)
    proc = pitstop("profile", "--json", "jp.json", "--no-drill-down", "train.py", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder / "jp.json"


def test_outputs_land_where_asked_when_the_script_changes_directory(tmp_path):
    """Row I: a script that calls os.chdir(elsewhere) cannot move --json, --html or --trace."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "jp.json").write_text("{}")  # an old file: must be replaced, not left stale
    script(tmp_path, before=f"os.chdir({str(elsewhere)!r})", steps=12)
    proc = pitstop("profile", "--json", "jp.json", "--html", "x.html", "--trace", "tr", "--wait", "2", "--active",
                   "2", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "jp.json").read_text())
    assert doc["kind"] == "profile" and doc["steps"] == 12
    assert (tmp_path / "x.html").is_file() and any((tmp_path / "tr").iterdir())
    assert sorted(p.name for p in elsewhere.iterdir()) == []
    assert f"JSON written to {tmp_path / 'jp.json'}" in proc.stdout


# the doctor and the profile share one child launcher (pitstop.hooks.child): where a case costs a wait of
# its own (a timeout, a kill mid-run) the doctor's side runs under -m slow
DOCTOR_SLOW = pytest.param("doctor", marks=pytest.mark.slow)


@pytest.mark.parametrize(("case", "content"), [
    ("raises before step 1", "raise RuntimeError('broken before training')\n"),
    ("syntax error", "def broken(:\n"),
    ("NUL byte", "x = 1\x00\n"),
    ("never calls backward", "import torch\nm = torch.nn.Linear(4, 2)\n"
                             "for _ in range(20):\n    m(torch.randn(8, 4))\n"),
    ("runs 0 steps", "import torch\nprint('nothing to do')\n"),
])
def test_a_run_that_measured_nothing_keeps_a_good_report(good_profile, tmp_path, case, content):
    """Row K: the good jp.json is not replaced by a 0-step report."""
    good = Path(shutil.copy(good_profile, tmp_path / "jp.json"))
    before = good.read_bytes()
    (tmp_path / "train.py").write_bytes(content.encode())
    proc = pitstop("profile", "--json", "jp.json", "train.py", cwd=tmp_path)
    assert "src/pitstop" not in proc.stderr  # the script's own traceback at most, never pitstop's
    assert good.read_bytes() == before, case
    assert "left as it was" in proc.stdout or proc.returncode != 0


def test_a_crashed_run_does_not_replace_a_complete_report(good_profile, tmp_path):
    good = Path(shutil.copy(good_profile, tmp_path / "jp.json"))
    before = good.read_bytes()
    script(tmp_path, after="raise RuntimeError('after training')")
    proc = pitstop("profile", "--json", "jp.json", "--no-drill-down", "train.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert good.read_bytes() == before
    partial = json.loads((tmp_path / "jp.partial.json").read_text())
    assert partial["steps"] == 30 and partial["exit"]["status"] == "crashed"


@pytest.mark.parametrize("command", ["profile", "doctor"])
def test_json_on_stdout_stays_json_when_the_script_prints_and_exits_hard(tmp_path, command):
    """Row M: the script's prints go to stderr when the JSON goes to stdout; and a script that calls
    os._exit(3) after training still gets its report (and its exit code). One run proves both: only a
    real child process can print, and exit without running pitstop's code after the script."""
    script(tmp_path, after="os._exit(3)")
    extra = ["--no-drill-down"] if command == "profile" else []
    proc = pitstop(command, "--json", "-", *extra, "train.py", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)  # nothing but the document
    assert doc["kind"] == command and doc["steps"] == 30
    assert doc["exit"]["status"] == "exited" and doc["exit"]["code"] == 3
    assert "step 29" in proc.stderr


@pytest.mark.parametrize("command", ["profile", DOCTOR_SLOW])
def test_a_script_killed_by_a_signal_keeps_its_last_snapshot(tmp_path, command):
    """SIGKILL in the middle of training, 3 s in (a snapshot goes out every 2 s): the last snapshot
    is the report, marked as such."""
    script(tmp_path, steps=100_000, before="import signal, time\nT0 = time.monotonic()",
           backward="loss.backward()\n    if time.monotonic() - T0 > 3: os.kill(os.getpid(), signal.SIGKILL)")
    quick = ["--no-drill-down"] if command == "profile" else []  # the operator table is not what is proved
    proc = pitstop(command, *quick, "--json", "r.json", "train.py", cwd=tmp_path)
    assert proc.returncode == 128 + 9
    doc = json.loads((tmp_path / "r.json").read_text())
    assert 0 < doc["steps"] and doc["exit"]["status"] == "killed"
    assert "was killed by SIGKILL" in doc["exit"]["error"]


@pytest.mark.parametrize("command", ["profile", "doctor"])
def test_a_process_killed_on_its_way_out_keeps_its_complete_report(tmp_path, command):
    """The script finished and its report was sent; then its process aborted at interpreter exit
    (torch 2.13's gloo threads do so now and then after ``destroy_process_group``, seen on CI): the
    report is the complete one, not 'the last snapshot', and the script's code is passed on."""
    script(tmp_path, before="import atexit, signal\natexit.register(lambda: os.kill(os.getpid(), signal.SIGABRT))")
    proc = pitstop(command, "--json", "r.json", "train.py", cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGABRT, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["steps"] == 30 and doc["exit"]["status"] == "ok", doc["exit"]
    assert "killed by SIGABRT after it sent its final report" in doc["exit"]["after_report"]
    assert "the report is complete" in proc.stderr


def test_trace_into_an_unwritable_place_is_refused_before_the_run(tmp_path):
    (tmp_path / "a-file").write_text("x")
    script(tmp_path, before="raise SystemExit('the script must not run')")
    proc = pitstop("profile", "--trace", "a-file/tr", "train.py", cwd=tmp_path)
    assert proc.returncode == 2 and "--trace: " in proc.stderr and "must not run" not in proc.stderr


@pytest.mark.parametrize("command", ["profile", DOCTOR_SLOW])
def test_a_script_that_hangs_is_stopped_at_its_timeout_and_keeps_what_it_measured(tmp_path, command):
    """--timeout-s on a script that trains, then hangs: stopped (exit 124), its report is the steps
    it took, marked as timed out; a good earlier report is not replaced by it."""
    script(tmp_path, after="import time\ntime.sleep(3600)")
    # 12 s: the timeout counts from the child's start, so it must cover torch's import and the 30
    # steps on a loaded machine (a few seconds); the hang is waited for that long, no more
    proc = pitstop(command, "--timeout-s", "12", "--json", "r.json", "train.py", cwd=tmp_path)
    assert proc.returncode == 124, proc.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["steps"] == 30 and doc["exit"]["status"] == "timed out", doc["exit"]
    assert "timeout of 12 s" in doc["exit"]["error"] or "12 s timeout" in doc["exit"]["error"]
    jsonschema.validate(doc, BY_KIND[command])


def test_ctrl_c_ends_the_profile_with_what_it_measured_and_keeps_the_good_report(good_profile, tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group: pitstop and the script) in the middle of a
    long run: exit 130, the steps so far reported as interrupted beside a good earlier report,
    which stays as it was."""
    import signal
    import time

    good = Path(shutil.copy(good_profile, tmp_path / "jp.json"))
    before = good.read_bytes()
    # the script marks its 30th step in a file: the test waits for that, not for a guessed time
    script(tmp_path, steps=100000, before="import time", backward="loss.backward()\n    time.sleep(0.005)\n"
           "    if step == 30: open('training', 'w').close()")
    proc = subprocess.Popen([sys.executable, "-m", "pitstop", "profile", "--json", "jp.json", "--no-drill-down",
                             "train.py"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": SRC}, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "training").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None and (tmp_path / "training").exists(), proc.communicate()[1]
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert good.read_bytes() == before  # the interrupted run is not the complete one
    partial = json.loads((tmp_path / "jp.partial.json").read_text())
    assert partial["steps"] > 10 and partial["exit"]["status"] == "interrupted", partial["exit"]
    assert "interrupted" in out + err


@pytest.mark.parametrize("which", ["doctor", "profile"])
def test_a_callbacks_json_is_checked_up_front_kept_when_empty_and_lands_where_asked(good_profile, tmp_path,
                                                                                   monkeypatch, which):
    """The Lightning / HF callbacks' ``json_path`` follows the CLI's rules: checked when the callback
    is made (before training), relative to where it was made (a script that changes directory
    still writes there), and a run that measured nothing leaves a good report as it was."""
    import types

    import torch
    transformers = pytest.importorskip("transformers", reason="the zoo extra is part of make test")
    from pitstop.errors import SettingError

    module = __import__(f"pitstop.{which}.adapters.hf", fromlist=["x"])
    callback_class = module.DoctorCallback if which == "doctor" else module.ProfileCallback
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(SettingError, match="a-file"):
        callback_class(json_path=str(tmp_path / "a-file" / "r.json"))
    monkeypatch.chdir(tmp_path)
    good = Path(shutil.copy(good_profile, tmp_path / "r.json"))
    before = good.read_bytes()
    args, state, control = types.SimpleNamespace(), transformers.TrainerState(), transformers.TrainerControl()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    empty = callback_class(json_path="r.json", verbose=False)
    empty.on_train_begin(args, state, control, model=model, optimizer=opt)
    empty.on_train_end(args, state, control)  # no step at all
    assert good.read_bytes() == before
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    trained = callback_class(json_path="new.json", verbose=False)
    monkeypatch.chdir(elsewhere)  # the script moves after making its callback
    trained.on_train_begin(args, state, control, model=model, optimizer=opt)
    for _ in range(3):
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    trained.on_train_end(args, state, control)
    doc = json.loads((tmp_path / "new.json").read_text())
    assert doc["kind"] == which and doc["steps"] == 3 and not (elsewhere / "new.json").exists()


@pytest.mark.parametrize("flag", ["--json", "--html", "--trace"])
def test_a_read_only_folder_is_refused_before_the_script_runs(tmp_path, immutable, flag):
    """Row H for profile with a real read-only folder: the output flag is named, the script never
    starts, the folder's old content stays."""
    script(tmp_path, before="raise SystemExit('the script must not run')")
    target = immutable / ("tr" if flag == "--trace" else "out.json" if flag == "--json" else "out.html")
    proc = pitstop("profile", flag, str(target), "train.py", cwd=tmp_path)
    assert proc.returncode == 2 and f"{flag}: " in proc.stderr and "must not run" not in proc.stderr, proc.stderr
    assert (immutable / "recipe.py").read_text() == "# the old recipe\n"


def test_snapshots_back_off_to_one_percent_of_the_run_and_the_report_says_what_they_cost():
    """A snapshot of a long run's report takes longer as the run grows (and in a DDP job every rank
    waits for the one making it): after one that took 50 ms, the next is not due for 5 s."""
    import time
    from multiprocessing import Pipe

    from pitstop.hooks.child import Channel

    mine, theirs = Pipe()
    channel = Channel(mine, 0.0)

    def slow() -> dict:
        time.sleep(0.05)
        return {"steps": 1}

    for _ in range(5):
        channel.snapshot(slow)
    assert channel.sent == 1 and channel.due - time.monotonic() > 4.0
    kind, text = theirs.recv()
    assert kind == "snapshot" and json.loads(text) == {"steps": 1}
    channel.final({"steps": 2}, 0)
    kind, text, code = theirs.recv()
    doc = json.loads(text)
    assert kind == "final" and code == 0 and doc["snapshots"]["sent"] == 1 and doc["snapshots"]["seconds"] >= 0.05


def test_under_torchrun_only_rank_0_sends_snapshots(monkeypatch):
    """Rank 0's parent writes the job's report; another rank's snapshot would stall every rank
    (they wait for it in the next all-reduce) for a document nobody reads. Its final report is
    still sent (the exit code and the gathered summary travel with it)."""
    from multiprocessing import Pipe

    from pitstop.hooks.child import Channel

    for rank, sent in (("1", 0), ("0", 1)):
        monkeypatch.setenv("RANK", rank)
        mine, theirs = Pipe()
        channel = Channel(mine, 0.0)
        channel.snapshot(lambda: {"steps": 1})
        assert channel.sent == sent and theirs.poll(0.1) == bool(sent)
        if sent:
            theirs.recv()
        channel.final({"steps": 2}, 0)
        assert theirs.recv()[0] == "final"


def test_the_waiting_parent_never_imports_torch(tmp_path):
    """The report comes back as JSON text: unpickling the environment's ``torch.__version__`` (a
    TorchVersion) imported torch in the waiting parent, two seconds of a core taken from the
    script's first steps on every rank of a torchrun job."""
    script(tmp_path)
    probe = ("import sys; from pitstop.engine.scripts import run_child; "
             "o = run_child({'command': 'profile', 'runner': 'pitstop.profile.child', 'script': 'train.py', "
             "'args': [], 'settings': {'drill_down': False}, 'snapshot_s': 0.0}); "
             "print(o.final, o.document['environment']['torch'], 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": SRC})
    final, version, imported = proc.stdout.split()[-3:]
    assert proc.returncode == 0 and final == "True" and version[0].isdigit(), proc.stderr
    assert imported == "False"
