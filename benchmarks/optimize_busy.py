"""Does a choice made on a busy machine hold on a quiet one? (issue 47, the load discipline)

For each model (by default three never measured here before the rules were set: `optimize_models.py`'s
data-dependent model and the zoo's transformer and CNN; any spec, or a name of `optimize_models.py`):
one `pitstop.optimize` search on the quiet machine, one with a busy process per core (a pure-Python
spin loop each, started before the search and stopped after it), then ONE interleaved bench run on
the quiet machine that measures both choices side by side (and the start point). Printed per model:
both choices, the busy search's notes (what the load discipline decided), and busy choice / quiet
choice re-measured quietly (speed-up per sample, median and 95% interval; >= 0.95 is the target).
The load average and the CPU are printed with every figure.

    python benchmarks/optimize_busy.py [--models gru_text,conv,attention] [--search-s 90] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from optimize_models import HERE as MODELS_FILE  # the models, as file.py:factory specs

DEFAULT = ("dynamic", "zoo:transformer", "zoo:cnn")  # held out: never run here before the rules were set


class Busy:
    """One busy process per core while inside the ``with``: not children of this process (another
    user's, as far as pitstop can tell: the shell that started them has exited), as a busy shared
    machine's are."""

    def __enter__(self) -> Busy:
        self.pids = []
        for _ in range(os.cpu_count() or 1):
            started = subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'while True: pass' >/dev/null 2>&1 & "
                                                  "echo $!"], capture_output=True, text=True, check=True)
            self.pids.append(int(started.stdout.strip()))
        time.sleep(3.0)  # the load is there before the search starts
        return self

    def __exit__(self, *exc: Any) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def settle(limit_s: float = 90.0) -> float:
    """Wait until the 1-minute load average is under 1 (at most ``limit_s``); the load then."""
    deadline = time.monotonic() + limit_s
    while os.getloadavg()[0] >= 1.0 and time.monotonic() < deadline:
        time.sleep(2.0)
    return os.getloadavg()[0]


def run(name: str, batch: int, search_s: float, budget_s: float) -> dict[str, Any]:
    import pitstop

    spec = name if ":" in name else f"{MODELS_FILE}:{name}"  # a zoo or file spec as it is
    load_quiet = settle()
    quiet = pitstop.optimize(spec, batch_size=batch, time_budget_s=search_s, replicas=2)
    with Busy():
        load_busy = os.getloadavg()[0]
        busy = pitstop.optimize(spec, batch_size=batch, time_budget_s=search_s, replicas=2)
        load_busy_end = os.getloadavg()[0]
    settle()
    start = "eval+inference_mode"  # optimize's start point: both choices are measured beside it too
    variants = list(dict.fromkeys([start, quiet.config.name, busy.config.name]))
    load_check = os.getloadavg()[0]
    result = pitstop.bench(spec, batch_sizes=[batch], variants=variants, budget_s=budget_s, replicas=2)
    c = None if quiet.config.name == busy.config.name else result.comparison(busy.config.name, batch,
                                                                             quiet.config.name)
    doc = busy.report.to_dict()
    return {"model": name, "quiet_choice": quiet.config.name, "busy_choice": busy.config.name,
            "busy_notes": doc.get("notes") or [],
            "busy_vs_quiet": [1.0, 1.0, 1.0] if c is None else [c.ratio.median, *c.ratio.ci95],
            "load": {"quiet_search_start": load_quiet, "busy_search_start": load_busy,
                     "busy_search_end": load_busy_end, "quiet_check_start": load_check},
            "busy_stage_loads": [s.get("load") for s in doc["search"]["stages"]],
            "documents": {"quiet": quiet.report.to_dict(), "busy": doc}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--search-s", type=float, default=90.0)
    parser.add_argument("--budget-s", type=float, default=3.0, help="timed seconds per variant in the quiet check")
    parser.add_argument("--json", help="write every result here")
    args = parser.parse_args()
    from pitstop._env import cpu_name

    print(f"CPU {cpu_name()}, {os.cpu_count()} cores; searches of {args.search_s:.0f} s, quiet and with "
          f"{os.cpu_count()} busy processes; both choices re-measured quietly, interleaved", flush=True)
    results = []
    for name in args.models.split(","):
        r = run(name.strip(), args.batch, args.search_s, args.budget_s)
        results.append(r)
        m, lo, hi = r["busy_vs_quiet"]
        met = "met" if m >= 0.95 else "NOT met"
        print(f"{r['model']}: quiet chose {r['quiet_choice']}, busy chose {r['busy_choice']}; busy / quiet "
              f"re-measured quietly {m:.2f}x [{lo:.2f}-{hi:.2f}] (target >= 0.95: {met}); load "
              f"{r['load']['quiet_search_start']:.1f} (quiet search), {r['load']['busy_search_start']:.1f}-"
              f"{r['load']['busy_search_end']:.1f} (busy search), {r['load']['quiet_check_start']:.1f} (check)",
              flush=True)
        for note in r["busy_notes"]:
            print(f"    busy search: {note}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
