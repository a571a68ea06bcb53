"""Fault injection: run pitstop on models, datasets and scripts that crash, hang or are killed, and
print what survived. Each case is a real `python -m pitstop ...` process on a model of
tests/reliability/faulty.py or train_faulty.py, or a small training script written here; nothing
is mocked.

    python benchmarks/fault_injection.py [--timeout-s 15] [--only bench optimize train profile doctor data]

Cases: bench: in one variant (of two measured) a segfault, a hang past --timeout-s and a SIGKILL
(what the kernel's out-of-memory killer sends); in the first forward (which runs in the worker
processes) an os._exit and a hang. optimize: the same in one candidate, Ctrl-C mid-search, an
unwritable --save. data: a dataset that exits or hangs. train: a training forward
that calls os._exit, a backward that hangs, one worker SIGKILLed mid-search, Ctrl-C (SIGINT)
mid-search, a reference that fails at step 3, an unwritable --save. profile: a script that crashes
after training, one that hangs (stopped by --timeout-s), one SIGKILLed mid-run, Ctrl-C, an
unwritable --json; doctor: the same five. For each: the exit code, the seconds it took, what survived, and whether a
good result file given as --json was kept (a failed run must not replace it: a partial result
goes beside it, as NAME.partial.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTY = str(ROOT / "tests/reliability/faulty.py")
TRAIN_FAULTY = str(ROOT / "tests/reliability/train_faulty.py")
QUICK = ["--batch-sizes", "2", "--budget-s", "0.2", "--replicas", "1", "--threads", "1"]
TWO = ["--variants", "eval+no_grad,eval+inference_mode"]
TRAIN = ["--input", "float32[B,8]", "--target", "int64[B]{0,4}", "--batch-size", "8", "--time-budget-s", "10",
         "--techniques", "zero_grad", "--replicas", "1"]
LOOP = """\
import os, signal, sys, time, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for step in range(int(sys.argv[1])):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    time.sleep(0.01)
    if step == 100 and sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if step == 100 and sys.argv[2] == "hang":
        time.sleep(3600)
if sys.argv[2] == "crash":
    raise RuntimeError("the script fails after training")
"""

Action = Callable[[subprocess.Popen[str]], None]


def cases(timeout_s: float) -> list[tuple[str, str, list[str], Action | None]]:
    """(command, case, pitstop arguments, what to do to the running process) of every fault."""
    t = str(timeout_s)
    bench = ["bench", "--input", "float32[B,8]", *QUICK, "--timeout-s", t]
    data = ["--batch-size", "8", "--time-budget-s", "1", "--max-workers", "1", "--batches", "8"]
    train = ["train", *TRAIN, "--timeout-s", t]
    optimize = ["optimize", "--input", "float32[B,8]", "--techniques", "threads", "--time-budget-s", "10",
                "--replicas", "1", "--timeout-s", t]
    return [
        ("bench", "segfault in one variant", [*bench, *TWO, f"{FAULTY}:crash_in_one_variant"], None),
        ("bench", "hang in one variant", [*bench, *TWO, f"{FAULTY}:hang_in_one_variant"], None),
        ("bench", "OOM-kill (SIGKILL) in one variant", [*bench, *TWO, f"{FAULTY}:oom_kill_in_one_variant"], None),
        ("bench", "os._exit in the first forward", [*bench, f"{FAULTY}:exits_in_eval"], None),
        ("bench", "hang in the first forward", [*bench, f"{FAULTY}:hangs_under_no_grad"], None),
        ("optimize", "segfault in one candidate", [*optimize, f"{FAULTY}:crash_at_one_thread"], None),
        ("optimize", "hang in one candidate", [*optimize, f"{FAULTY}:hang_at_one_thread"], None),
        ("optimize", "OOM-kill (SIGKILL) of one candidate", [*optimize, f"{FAULTY}:oom_kill_at_one_thread"], None),
        ("optimize", "os._exit in the first forward", [*optimize, f"{FAULTY}:exits_in_eval"], None),
        ("optimize", "Ctrl-C (SIGINT) in the search", [*optimize, f"{FAULTY}:build"], interrupt_after_workers),
        ("optimize", "--save where no folder can be", [*optimize, f"{FAULTY}:build", "--save", "{tmp}/a-file/out"],
         None),
        ("data", "os._exit in a dataset", ["data", f"{FAULTY}:rows_exit", *data], None),
        ("data", "hang in a dataset", ["data", f"{FAULTY}:rows_hang", *data], None),
        ("train", "os._exit in a training forward", [*train, f"{TRAIN_FAULTY}:exits_in_training_forward"], None),
        ("train", "hang in backward", [*train, f"{TRAIN_FAULTY}:hangs_in_backward"], None),
        ("train", "SIGKILL of one worker", [*train, f"{FAULTY}:build"], kill_worker("zero-grad-zeros")),
        ("train", "Ctrl-C (SIGINT) in the search", [*train, f"{FAULTY}:build"], interrupt_after_workers),
        ("train", "the reference fails at step 3", [*train, f"{TRAIN_FAULTY}:raises_on_third_training_forward"],
         None),
        ("train", "--save where no folder can be", [*train, f"{FAULTY}:build", "--save", "{tmp}/a-file/out"], None),
        ("profile", "the script crashes after training", ["profile", "--no-drill-down", "{script}", "60", "crash"],
         None),
        ("profile", "the script hangs (--timeout-s)", ["profile", "--no-drill-down", "--timeout-s", t, "{script}",
                                                        "500", "hang"], None),
        ("profile", "the script is SIGKILLed", ["profile", "--no-drill-down", "{script}", "500", "kill"], None),
        ("profile", "Ctrl-C (SIGINT) in the script", ["profile", "--no-drill-down", "{script}", "5000", "run"],
         interrupt_after(6.0)),
        ("doctor", "the script crashes after training", ["doctor", "{script}", "60", "crash"], None),
        ("doctor", "the script hangs (--timeout-s)", ["doctor", "--timeout-s", t, "{script}", "500", "hang"], None),
        ("doctor", "the script is SIGKILLed", ["doctor", "{script}", "500", "kill"], None),
        ("doctor", "Ctrl-C (SIGINT) in the script", ["doctor", "{script}", "5000", "run"], interrupt_after(6.0)),
        ("doctor", "--json where no file can be", ["doctor", "--json", "{tmp}/a-file/d.json", "{script}", "60",
                                                   "run"], None),
        ("profile", "--json where no file can be", ["profile", "--json", "{tmp}/a-file/p.json", "{script}", "60",
                                                    "run"], None),
    ]


def kill_worker(variant: str) -> Action:
    """SIGKILL the worker process running ``variant`` as soon as it is up."""
    def act(proc: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            victim = next((pid for pid, name in workers_of(proc.pid).items() if name == variant), None)
            if victim is not None:
                time.sleep(0.5)
                os.kill(victim, signal.SIGKILL)
                return
            time.sleep(0.1)
    return act


def interrupt_after_workers(proc: subprocess.Popen[str]) -> None:
    """Ctrl-C once the search's worker processes are up (1.5 s later; any child: bench's and
    optimize's workers carry no PITSTOP_VARIANT)."""
    deadline = time.monotonic() + 120
    while not children_of(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)


def interrupt_after(seconds: float) -> Action:
    def act(proc: subprocess.Popen[str]) -> None:
        time.sleep(seconds)
        for pid in [proc.pid, *children_of(proc.pid)]:  # a terminal's Ctrl-C reaches the whole process group
            os.kill(pid, signal.SIGINT)
    return act


def children_of(parent: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int(next(ln.split()[1] for ln in (entry / "status").read_text().splitlines()
                                                 if ln.startswith("PPid:"))) == parent:
                out.append(int(entry.name))
        except (OSError, StopIteration):
            continue
    return out


def workers_of(parent: int) -> dict[int, str]:
    """pitstop's worker processes of ``parent``: pid -> the variant it runs (PITSTOP_VARIANT)."""
    found = {}
    for pid in children_of(parent):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        variant = next((e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"PITSTOP_VARIANT=")), None)
        if variant:
            found[pid] = variant
    return found


def run(case: tuple[str, str, list[str], Action | None], good: Path, folder: Path) -> dict[str, object]:
    """One case with a copy of its command's good result as --json; what came back."""
    command, name, args, action = case
    work = folder / f"{len(list(folder.iterdir()))}"
    work.mkdir()
    (work / "a-file").write_text("not a folder")
    (work / "loop.py").write_text(LOOP)
    args = [a.replace("{tmp}", str(work)).replace("{script}", str(work / "loop.py")) for a in args]
    result = work / "result.json"
    shutil.copy(good, result)
    before = result.read_bytes()
    given = [] if "--json" in args else ["--json", str(result)]
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pitstop", args[0], *given, *args[1:]], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=work,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    if action is not None:
        action(proc)
    out, err = proc.communicate(timeout=900)
    seconds = time.monotonic() - start
    partial = result.with_name("result.partial.json")
    return {"command": command, "case": name, "exit": proc.returncode, "s": seconds,
            "json": "replaced" if result.read_bytes() != before else "kept",
            "partial": partial.exists(), "traceback": "Traceback" in err and "src/pitstop" in err,
            "survived": survived(command, result if result.read_bytes() != before else partial, out, err)}


def survived(command: str, path: Path, out: str, err: str) -> str:
    """What the run left: rows and their status, steps and exit, or pitstop's one-line message."""
    doc = json.loads(path.read_text()) if path.exists() else None
    errors = [ln for ln in err.splitlines() if ln.startswith("pitstop")]
    if doc is None or command in ("data",):
        return errors[-1].split(": ", 2)[-1][:110] if errors else ""
    if command in ("bench", "train", "optimize"):
        rows = {}
        for r in doc.get("results", []):
            rows[r["variant"]] = r["status"]
        verdict = (doc.get("failed") or "")[:60]
        return ", ".join(f"{k} {v}" for k, v in rows.items()) + (f"; {verdict}" if verdict else "")
    return f"{doc.get('steps')} steps, exit {doc.get('exit', {}).get('status')}"


def good_results(folder: Path) -> dict[str, Path]:
    """One real, complete result per command, copied as the --json of each of its cases."""
    (folder / "loop.py").write_text(LOOP)
    runs = {
        "bench": ["bench", f"{FAULTY}:build", "--input", "float32[B,8]", *QUICK, *TWO],
        "data": ["data", f"{FAULTY}:rows", "--batch-size", "8", "--time-budget-s", "1", "--max-workers", "1",
                 "--batches", "8"],
        "optimize": ["optimize", f"{FAULTY}:build", "--input", "float32[B,8]", "--techniques", "threads",
                     "--time-budget-s", "10", "--replicas", "1"],
        "train": ["train", f"{FAULTY}:build", *TRAIN],
        "doctor": ["doctor", str(folder / "loop.py"), "60", "run"],
        "profile": ["profile", "--no-drill-down", str(folder / "loop.py"), "60", "run"],
    }
    paths = {}
    for command, args in runs.items():
        paths[command] = folder / f"good-{command}.json"
        subprocess.run([sys.executable, "-m", "pitstop", args[0], "--json", str(paths[command]), *args[1:]], check=True,
                       capture_output=True, cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout-s", type=float, default=15.0, help="pitstop's --timeout-s for the hangs")
    parser.add_argument("--only", nargs="*", default=["bench", "optimize", "data", "train", "profile", "doctor"],
                        help="commands to run")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2-core machine: seconds are loose when it is busy)")
    with tempfile.TemporaryDirectory(prefix="pitstop-faults-") as tmp:
        good = good_results(Path(tmp))
        folder = Path(tmp) / "runs"
        folder.mkdir()
        print(f"{'command':8} {'case':36} {'exit':>4} {'s':>6}  {'--json':8} {'partial':7} {'tb':3} "
              "what survived / message")
        for case in cases(args.timeout_s):
            if case[0] not in args.only:
                continue
            r = run(case, good[case[0]], folder)
            print(f"{r['command']:8} {r['case']:36} {r['exit']:>4} {r['s']:>6.1f}  {r['json']:8} "
                  f"{'beside' if r['partial'] else '-':7} {'yes' if r['traceback'] else 'no':3} {r['survived']}",
                  flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
