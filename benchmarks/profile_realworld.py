"""Does `pitstop profile` measure the phases that hand-written timers measure, on real training scripts?

For each script of `benchmarks/scripts_corpus.json` (its files, edits, setup and environment, by name),
`benchmarks/profile_realworld.json` holds `timers`: exact replacements that put `time.perf_counter()`
marks around the script's own forward, backward, optimizer step and batch fetch (for Lightning and the
HF Trainer, a callback; see `profile_realworld_timers.py`, copied next to the script as
`_hand_timers.py`). Two copies are prepared; the plain one runs under `pitstop profile --json F
--no-drill-down`, the timed one as `python SCRIPT ARGS` writing one line per optimizer step to
`PITSTOP_HAND_TIMES`, interleaved (profile, hand, hand, profile, ... over `--rounds`). The first step
is left out of both, and a validation between steps out of both step times.

Per script it prints each phase's median over all measured steps of all runs (samples pooled, not
medians averaged): the profile's, the hand timers', their ratio and the phase's share of the profile's
step, flagging `<<` a phase over 10% of the step whose ratio is outside [0.85, 1.15]; the hand-timed
spans the profile has no phase for (`notes`: a batch fetch that is not a DataLoader, a loss outside
the model, a framework's time between batches), the profile's `other` and `sync`; the verdict of each
profile run (once when they agree); the 1-minute load average before every run. Timings are wall
clock on whatever machine this is: on a busy machine the figures are indicative only.

    python benchmarks/profile_realworld.py [--rounds 2] [--only nanogpt mnist] [--json out.json]

With the corpus files absent it says so in one line and exits 0 (see scripts_corpus.py --collect).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scripts_corpus as corpus  # noqa: E402  (layout, prepare, environ: shared with the train/profile benches)

MANIFEST = HERE / "profile_realworld.json"
TIMERS = HERE / "profile_realworld_timers.py"
COMPARED = ("data", "forward", "backward", "optimizer")  # the phases the hand timers measure
PROFILE_ONLY = ("h2d", "sync", "other")
FLAG_SHARE, LOW, HIGH = 0.10, 0.85, 1.15  # flag a phase over 10% of the step measured >15% apart


def load_manifest(path: Path = MANIFEST) -> dict[str, dict[str, Any]]:
    """The timer specs by script name, `timers_from` resolved."""
    specs = {s["name"]: s for s in json.loads(path.read_text())["scripts"]}
    for spec in specs.values():
        if "timers_from" in spec:
            spec["timers"] = specs[spec["timers_from"]]["timers"]
    return specs


def prepare_hand(entry: dict[str, Any], spec: dict[str, Any], root: Path) -> Path:
    """A prepared copy with the hand timers applied and their module next to the script."""
    cwd = corpus.prepare(entry, root)
    corpus._apply(root, spec["timers"], entry["name"], "timers")
    shutil.copyfile(TIMERS, cwd / "_hand_timers.py")
    return cwd


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, err = 124, corpus._doctor._text(exc.stderr) + f"\ntimed out after {timeout:.0f} s"
    return {"rc": rc, "load": load, "wall_s": time.perf_counter() - start, "stderr_tail": err[-2000:] if rc else ""}


def run_profile(entry: dict[str, Any], cwd: Path, timeout: float) -> dict[str, Any]:
    out = cwd / "profile.json"
    out.unlink(missing_ok=True)
    script = [Path(entry["path"]).name, *entry["args"]]
    argv = [sys.executable, "-m", "pitstop", "profile", "--json", str(out), "--no-drill-down", *script]
    result = _run(argv, cwd, corpus.environ(entry), timeout)
    result["doc"] = json.loads(out.read_text()) if out.exists() else None
    return result


def run_hand(entry: dict[str, Any], cwd: Path, timeout: float) -> dict[str, Any]:
    out = cwd / "hand.jsonl"
    out.unlink(missing_ok=True)
    env = dict(corpus.environ(entry), PITSTOP_HAND_TIMES=str(out))
    result = _run(corpus.command(entry, steps=False), cwd, env, timeout)
    result["steps"] = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return result


def bench(entry: dict[str, Any], spec: dict[str, Any], rounds: int, timeout: float) -> dict[str, Any]:
    """Interleaved runs (profile, hand, hand, profile, ...) on two prepared copies: the raw results."""
    runs: dict[str, list[dict[str, Any]]] = {"profile": [], "hand": []}
    order: list[str] = []
    with tempfile.TemporaryDirectory(prefix=f"profile-rw-{entry['name']}-") as tmp:
        cwds = {"profile": corpus.prepare(entry, Path(tmp) / "plain"),
                "hand": prepare_hand(entry, spec, Path(tmp) / "hand")}
        for i in range(rounds):
            for mode in ("profile", "hand") if i % 2 == 0 else ("hand", "profile"):
                runner = run_profile if mode == "profile" else run_hand
                runs[mode].append(runner(entry, cwds[mode], timeout))
                order.append(mode[0].upper() + str(len(runs[mode])))
    return {"name": entry["name"], "kind": entry["kind"], "runs": runs, "order": order}


# -- statistics: pooled per-step samples -> medians ---------------------------------------------------------


def profile_samples(docs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """ms per measured step, per phase (and `step`: wall less evaluation), pooled over the runs' timelines."""
    samples: dict[str, list[float]] = {}
    for doc in docs:
        measured = {p["name"] for p in doc["phases"] if p["median_ms"] is not None}
        for s in (s for s in doc["timeline"] if s["measured"]):
            samples.setdefault("step", []).append(s["wall_ms"] - s["phases"].get("eval", 0.0))
            for phase in measured:
                samples.setdefault(phase, []).append(s["phases"].get(phase, 0.0))
    return samples


def hand_samples(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """ms per step, per hand-timed phase (and `step`), pooled over the runs; each run's first step left out."""
    samples: dict[str, list[float]] = {}
    for run in runs:
        steps = run["steps"][1:]  # step 1 warms up (the profile leaves it out too)
        names = {k for s in steps for k in s if k != "wall"}
        for s in steps:
            samples.setdefault("step", []).append((s["wall"] - s.get("eval", 0.0)) * 1e3)
            for name in names - {"eval"}:
                samples.setdefault(name, []).append(s.get(name, 0.0) * 1e3)
    return samples


def _median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def summarize(raw: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Medians, ratios, shares, flags; the verdicts and loads. A value, rendered by `render`."""
    docs = [r["doc"] for r in raw["runs"]["profile"] if r["doc"] and r["doc"].get("timeline")]
    prof, hand = profile_samples(docs), hand_samples(raw["runs"]["hand"])
    step = _median(prof.get("step"))
    rows = []
    for phase in ("step", *COMPARED):
        p, h = _median(prof.get(phase)), _median(hand.get(phase))
        ratio = p / h if p is not None and h else None
        share = p / step if p is not None and step else None
        flag = ratio is not None and phase != "step" and (share or 0) > FLAG_SHARE and not LOW <= ratio <= HIGH
        rows.append({"phase": phase, "profile_ms": p, "hand_ms": h, "ratio": ratio, "share": share, "flag": flag})
    for phase in PROFILE_ONLY:
        p = _median(prof.get(phase))
        rows.append({"phase": phase, "profile_ms": p, "hand_ms": None, "ratio": None,
                     "share": p / step if p is not None and step else None, "flag": False})
    notes = [{"span": k, "hand_ms": _median(hand.get(k)), "note": v} for k, v in spec.get("notes", {}).items()]
    verdicts = [[f"{v['cause']} ({_pct(v.get('share'))} of the step, saves {_pct(v.get('saves'))})"
                 for v in d["verdict"]] for d in docs]
    loads = {mode: [r["load"] for r in runs] for mode, runs in raw["runs"].items()}
    failed = [f"{mode} run {i + 1}: exit {r['rc']}: " + (r["stderr_tail"].strip().splitlines() or [""])[-1][:300]
              for mode, runs in raw["runs"].items() for i, r in enumerate(runs) if r["rc"]]
    per_run = {"profile": [_median(profile_samples([d]).get("step")) for d in docs],
               "hand": [_median(hand_samples([r]).get("step")) for r in raw["runs"]["hand"]]}
    return {"name": raw["name"], "kind": raw["kind"], "rows": rows, "notes": notes, "verdicts": verdicts,
            "loads": loads, "order": raw["order"], "failed": failed, "step_per_run": per_run,
            "n": {"profile_steps": len(prof.get("step", [])), "hand_steps": len(hand.get("step", []))}}


# -- rendering ------------------------------------------------------------------------------------------------


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f}%"


def _ms(v: float | None) -> str:
    return f"{v:10.2f}" if v is not None else "         -"


def render(s: dict[str, Any]) -> list[str]:
    loads = ", ".join(f"{m[0].upper()}{i + 1} {v:.2f}"
                      for m in ("profile", "hand") for i, v in enumerate(s["loads"][m]))
    lines = [f"{s['name']} ({s['kind']}): {s['n']['profile_steps']} profiled steps, {s['n']['hand_steps']} hand-timed "
             f"steps; run order {' '.join(s['order'])}; load before each run: {loads}",
             f"  {'phase':<10} {'profile ms':>10} {'hand ms':>10} {'ratio':>7} {'share':>6}"]
    for r in s["rows"]:
        ratio = f"{r['ratio']:7.2f}" if r["ratio"] is not None else "      -"
        lines.append(f"  {r['phase']:<10} {_ms(r['profile_ms'])} {_ms(r['hand_ms'])} {ratio} {_pct(r['share']):>6}"
                     + ("  << outside [0.85, 1.15]" if r["flag"] else ""))
    lines += [f"  note: {n['span']} {_ms(n['hand_ms']).strip()} ms by hand: {n['note']}" for n in s["notes"]]
    runs = s.get("step_per_run") or {}
    if runs:
        lines.append("  step median per run: " + ", ".join(
            f"{m[0].upper()}{i + 1} {v:.1f}" for m in ("profile", "hand") for i, v in enumerate(runs.get(m, []))
            if v is not None))
    causes = [[c.split(" (")[0] for c in v] for v in s["verdicts"]]  # the causes, their shares aside
    same = all(c == causes[0] for c in causes)
    for i, v in enumerate(s["verdicts"] if not same or len(s["verdicts"]) < 2 else s["verdicts"][:1]):
        head = "verdict" if len(s["verdicts"]) == 1 else "verdict (the runs agree; the first)" if same else \
            f"verdict of run {i + 1} (the runs name different causes)"
        lines.append(f"  {head}: " + ("; ".join(v) or "nothing to fix"))
    lines += [f"  FAILED {f}" for f in s["failed"]]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of (profile, hand) runs, alternating order (default 2)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these scripts")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--json", type=Path, help="write the summaries here")
    args = ap.parse_args()
    specs = load_manifest(args.manifest)
    entries = [e for e in corpus.load_manifest() if e["name"] in specs]
    if args.only:
        unknown = set(args.only) - {e["name"] for e in entries}
        if unknown:
            ap.error(f"--only: no script named {', '.join(sorted(unknown))} in {args.manifest.name}")
        entries = [e for e in entries if e["name"] in args.only]
    gone = corpus.missing(entries)
    if gone:
        print(f"profile_realworld: the third-party scripts are not here ({', '.join(gone)} missing from "
              f"{corpus.corpus_dir() or ' or '.join(map(str, corpus.CORPORA))}); fetch them and run "
              "scripts_corpus.py --collect MIRRORS. Skipped.")
        return 0
    summaries = []
    for entry in entries:
        summaries.append(summarize(bench(entry, specs[entry["name"]], args.rounds, args.timeout), specs[entry["name"]]))
        print("\n".join(render(summaries[-1])), flush=True)
        if args.json:
            args.json.write_text(json.dumps(summaries, indent=1))
    flagged = [f"{s['name']}:{r['phase']}" for s in summaries for r in s["rows"] if r["flag"]]
    print(f"{len(summaries)} scripts; phases over 10% of the step measured outside [0.85, 1.15] of the hand timers: "
          + (", ".join(flagged) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
