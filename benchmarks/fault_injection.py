"""Fault injection: run pitstop on models and datasets that crash, hang or are killed, and print
what survived. Each case is a real `python -m pitstop ...` process on a model from
tests/reliability/faulty.py; nothing is mocked.

    python benchmarks/fault_injection.py [--timeout-s 15]

Cases: in one variant (of two measured) a segfault, a hang past --timeout-s, and a SIGKILL (what
the kernel's out-of-memory killer sends); in the first forward pass (which runs in the worker
processes) an os._exit and a hang; in a dataset (pitstop data) an os._exit and a hang. For each:
the exit code, the seconds it took, which variants still have results, and whether a good
result file given as --json was kept (a failed run must not replace it with an empty one).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAULTY = "tests/reliability/faulty.py"
QUICK = ["--batch-sizes", "2", "--budget-s", "0.2", "--replicas", "1", "--threads", "1"]
TWO = ["--variants", "eval+no_grad,eval+inference_mode"]


def cases(timeout_s: float) -> list[tuple[str, list[str]]]:
    """(name, pitstop arguments) of every fault; --json is added by ``run``."""
    bench = ["bench", "--input", "float32[B,8]", *QUICK, "--timeout-s", str(timeout_s)]
    data = ["--batch-size", "8", "--time-budget-s", "1", "--max-workers", "1", "--batches", "8"]
    return [
        ("segfault in one variant", [*bench, *TWO, f"{FAULTY}:crash_in_one_variant"]),
        ("hang in one variant", [*bench, *TWO, f"{FAULTY}:hang_in_one_variant"]),
        ("OOM-kill (SIGKILL) in one variant", [*bench, *TWO, f"{FAULTY}:oom_kill_in_one_variant"]),
        ("os._exit in the first forward", [*bench, f"{FAULTY}:exits_in_eval"]),
        ("hang in the first forward", [*bench, f"{FAULTY}:hangs_under_no_grad"]),
        ("os._exit in a dataset", ["data", f"{FAULTY}:rows_exit", *data]),
        ("hang in a dataset", ["data", f"{FAULTY}:rows_hang", *data]),
    ]


def run(name: str, args: list[str], good: Path, folder: Path) -> dict[str, object]:
    """One case with a copy of the good result as --json; what came back."""
    result = folder / f"{len(list(folder.iterdir()))}.json"
    shutil.copy(good, result)
    before = result.read_bytes()
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pitstop", *args, "--json", str(result)],
                          capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - start
    after = result.read_bytes()
    survived = "-"
    if after != before and args[0] == "bench":
        rows = json.loads(after)["results"]
        survived = ", ".join(f"{r['variant']} {r['status']}" for r in rows)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("pitstop")]
    return {"case": name, "exit": proc.returncode, "s": seconds, "survived": survived,
            "json": "replaced" if after != before else "kept", "traceback": "Traceback" in proc.stderr,
            "message": errors[-1].split(": ", 2)[-1][:150] if errors else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout-s", type=float, default=15.0, help="pitstop's --timeout-s for the hangs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitstop-faults-") as tmp:
        folder = Path(tmp) / "runs"
        folder.mkdir()
        good = Path(tmp) / "good.json"
        subprocess.run([sys.executable, "-m", "pitstop", "bench", f"{FAULTY}:build", "--input", "float32[B,8]",
                        *QUICK, *TWO, "--json", str(good)], check=True, capture_output=True)
        print(f"good result: {good.stat().st_size:,} bytes; every case gets a copy as --json\n")
        print(f"{'case':36} {'exit':>4} {'s':>6}  {'--json':8} {'tb':3} what survived / message")
        for name, case_args in cases(args.timeout_s):
            r = run(name, case_args, good, folder)
            detail = r["survived"] if r["survived"] != "-" else r["message"]
            print(f"{r['case']:36} {r['exit']:>4} {r['s']:>6.1f}  {r['json']:8} {'yes' if r['traceback'] else 'no':3} "
                  f"{detail}", flush=True)


if __name__ == "__main__":
    main()
