"""Is `pitstop profile`'s `page-faults` cause right on real training scripts, and does its action pay?

For each script of `benchmarks/scripts_corpus.json` (files git-ignored, see scripts_corpus.py), one
prepared copy runs under `pitstop profile --json F --no-drill-down` twice per round: as it is, and
with the allocator held as the verdict's action says (`MALLOC_MMAP_THRESHOLD_` and
`MALLOC_TRIM_THRESHOLD_`, `pitstop.profile.faults.HOLD`), the order alternating each round. Per
script it prints the minor page faults per step of each side, the verdict's estimate for the
as-is runs (the page-faults entry's share of the step, or none), and the measured ratio of the
median steps (held / as is: below 1 is faster), with the runs' medians and the load average before
each run. The rule's threshold (an estimated 5% of the step) was set before these scripts were run.

    python benchmarks/page_faults.py [--rounds 2] [--only dcgan mnist] [--json out.json]

With the corpus files absent it says so in one line and exits 0 (see scripts_corpus.py --collect).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scripts_corpus as corpus  # noqa: E402
from pitstop.profile.faults import HOLD  # noqa: E402


def profiled(entry: dict[str, Any], cwd: Path, held: bool, timeout: float) -> dict[str, Any]:
    """One `pitstop profile` run of the prepared script: its step median, page faults and verdict."""
    out = cwd / "profile.json"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in corpus.environ(entry).items() if not k.startswith("MALLOC_")}
    env.update(HOLD if held else {})
    argv = [sys.executable, "-m", "pitstop", "profile", "--json", str(out), "--no-drill-down",
            Path(entry["path"]).name, *entry["args"]]
    load = os.getloadavg()[0]
    try:
        rc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = 124
    doc = json.loads(out.read_text()) if out.exists() else {}
    cause = next((v for v in doc.get("verdict", []) if v["cause"] == "page-faults"), None)
    return {"rc": rc, "load": load, "step_ms": (doc.get("step_ms") or {}).get("median"),
            "faults": (doc.get("page_faults") or {}).get("per_step"),
            "us_each": (doc.get("page_faults") or {}).get("us_each"),
            "estimate": cause["share"] if cause else None}


def bench(entry: dict[str, Any], rounds: int, timeout: float) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"as_is": [], "held": []}
    with tempfile.TemporaryDirectory(prefix=f"page-faults-{entry['name']}-") as tmp:
        cwd = corpus.prepare(entry, Path(tmp))
        for r in range(rounds):
            for side in (("as_is", "held") if r % 2 == 0 else ("held", "as_is")):
                runs[side].append(profiled(entry, cwd, side == "held", timeout))
    return {"name": entry["name"], "runs": runs}


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def render(result: dict[str, Any]) -> list[str]:
    a, h = result["runs"]["as_is"], result["runs"]["held"]
    step_a, step_h = _median([r["step_ms"] for r in a]), _median([r["step_ms"] for r in h])
    named = [r["estimate"] for r in a if r["estimate"] is not None]
    ratio = f"{step_h / step_a:.3f}" if step_a and step_h else "-"
    return [f"{result['name']}: faults/step as is {[r['faults'] for r in a]}, held {[r['faults'] for r in h]}; "
            f"verdict page-faults in {len(named)} of {len(a)} runs (estimate {[round(x, 3) for x in named]}); "
            f"step held / as is {ratio} (as is {[_r(r['step_ms']) for r in a]} ms, held "
            f"{[_r(r['step_ms']) for r in h]} ms; load {[round(r['load'], 1) for r in a + h]}; "
            f"us/fault {[_r(r['us_each']) for r in a]})"]


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds of (as is, held) runs, order alternating")
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run (default 900)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    entries = [e for e in corpus.load_manifest() if not args.only or e["name"] in args.only]
    gone = corpus.missing(entries)
    if gone:
        print(f"page_faults: the third-party scripts are not here ({', '.join(gone)}); run "
              "scripts_corpus.py --collect MIRRORS first. Skipped.")
        return 0
    results = []
    print(f"load average {os.getloadavg()[0]:.2f}; held = {' '.join(f'{k}={v}' for k, v in HOLD.items())}", flush=True)
    for entry in entries:
        results.append(bench(entry, args.rounds, args.timeout))
        print("\n".join(render(results[-1])), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
