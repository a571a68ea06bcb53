"""Does `pitstop train SCRIPT` hold up on real training scripts it was never built or tuned on? (issue 25)

The scripts of `benchmarks/train_heldout.json` are public pytorch/examples scripts that none of the
script-mode work looked at (`scripts_corpus.json` is the tuning set): a VAE, an LSTM on MNIST, a
siamese network, super-resolution, LBFGS with a closure, forward-forward (one optimizer per layer,
no end-to-end backward), two reinforcement-learning loops (one step per episode), and two that
script mode cannot take (parameters updated by hand; training in worker processes). Each outcome
was labelled before the first run: `search` (exit 0 with a gated result; a patch, where written,
applies with `git apply` and the patched script runs without pitstop) or `refuse` (exit 2 and one
line naming why, no traceback).

Per script: `pitstop train --time-budget-s B --json --patch SCRIPT -- ARGS` (B: `--budget-s`, or the
entry's `budget_s`) in a prepared copy (the
doctor benchmark's: same files, data edits and shims), then, for a patch, a fresh copy patched and
run with the doctor entry's short arguments. One line each: exit code, search time, winner and its
predicted speed-up, the patch's size, whether it applies and runs, the error line, and a verdict:
OK (the labelled outcome), REFUSED (exit 2 where a search was expected), ACCEPTED (a search where a
refusal was expected), NO RESULT (exit 1: the reference failed, could not be measured, or the budget
is too short for the script's steps), CRASH (a traceback, a timeout or another exit code), PATCH
FAILS, BROKEN (the script fails without pitstop: the setup is wrong). Load average is printed with each search.

With `--remeasure R`, a patch that applies and runs is then measured as train_scripts.py measures
its corpus: the original and the patched copy run whole with the search's arguments (`python SCRIPT
ARGS` under the step-timing wrapper; `max_steps` in the entry ends a loop that never ends on its
own), interleaved over R rounds, then the original once more per further seed (`--seeds`); printed:
the speed-up of the median step (and the range of the per-round ratios), the loss after the last
common step of both, and whether the patched runs pass the gate drawn from the original's runs
(`pitstop.train.fidelity.band`, judged by `finals_verdict`). The target of issue 25: never slower
than 0.97x, and in the gate.

    python benchmarks/train_heldout.py [--only vae regression] [--budget-s 120] [--json out.json]
                                       [--remeasure 4] [--seeds 3]

The files come from the doctor benchmark's git-ignored corpus (`python benchmarks/doctor_realworld.py
--collect /work/.mirror`); without them the script says so in one line and exits 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import doctor_realworld as doctor  # noqa: E402  (the corpus, its data edits and shims)
import train_scripts  # noqa: E402  (whole runs under the step-timing wrapper, the gate)

MANIFEST = HERE / "train_heldout.json"


def entries(manifest: Path = MANIFEST) -> list[dict[str, Any]]:
    """Each held-out entry merged onto its doctor entry: the search's `args`/`env`, the short `run_args`/`run_env`."""
    base = {e["name"]: e for e in json.loads(doctor.MANIFEST.read_text())["scripts"]}
    out = []
    for held in json.loads(manifest.read_text())["scripts"]:
        e = base[held["name"]]
        out.append({**e, **held, "run_args": e["args"], "run_env": e.get("env", {})})
    return out


def _copy(entry: dict[str, Any], corpus: Path, root: Path) -> Path:
    cwd = doctor.prepare(entry, corpus, root)
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "original"]):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    return cwd


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:240] if lines else ""


def run_script(entry: dict[str, Any], cwd: Path, timeout: float) -> tuple[int, str]:
    """The script without pitstop, with the doctor entry's short arguments: exit code, last stderr line."""
    short = {**entry, "env": entry["run_env"]}
    try:
        proc = subprocess.run([sys.executable, Path(entry["path"]).name, *entry["run_args"]], cwd=cwd,
                              env=doctor.environ(short), capture_output=True, text=True, timeout=timeout)
        return proc.returncode, _tail(proc.stderr)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"


def bench(entry: dict[str, Any], corpus: Path, budget_s: float, timeout: float,
          rounds: int = 0, seeds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"train-heldout-{entry['name']}-") as tmp:
        cwd = _copy(entry, corpus, Path(tmp) / "repo")
        plain_rc, plain_err = run_script(entry, cwd, timeout)
        out, patch = cwd / "t.json", cwd / "speedup.diff"
        budget_s = entry.get("budget_s", budget_s)  # a script whose steps take seconds names its own
        argv = [sys.executable, "-m", "pitstop", "train", "--time-budget-s", str(budget_s), "--json", str(out),
                "--patch", str(patch), Path(entry["path"]).name, "--", *entry["args"]]
        load = os.getloadavg()[0]
        start = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=cwd, env=doctor.environ(entry), capture_output=True, text=True,
                                  timeout=budget_s * 3 + 300)
            rc, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, stderr = 124, doctor._text(exc.stderr) + "\nsearch timed out"
        wall = time.monotonic() - start
        doc = json.loads(out.read_text()) if out.exists() else {}
        winner = doc.get("winner") or {}
        r: dict[str, Any] = {
            "name": entry["name"], "expect": entry["expect"], "rc": rc, "search_s": wall,
            "loadavg": [load, os.getloadavg()[0]], "plain_rc": plain_rc, "plain_error": plain_err,
            "winner": winner.get("variant"), "predicted": (winner.get("speedup") or {}).get("median"),
            "sites": sorted((doc.get("script") or {}).get("sites", {})), "traceback": "Traceback" in stderr,
            "error": (_tail(stderr) or str(doc.get("failed") or "")[:240]) if rc else "",
            "patch_lines": 0, "patch": "", "patched_rc": None,
            "rows": [{k: row.get(k) for k in ("stage", "variant", "status", "reason")}
                     for row in doc.get("results", [])]}
        if patch.exists():
            text = patch.read_text()
            r["diff"] = text
            r["patch_lines"] = sum(ln.startswith(("+", "-")) and not ln.startswith(("+++", "---"))
                                   for ln in text.splitlines())
            fresh = _copy(entry, corpus, Path(tmp) / "patched")
            applied = subprocess.run(["git", "apply", "-"], cwd=Path(tmp) / "patched", input=text, text=True,
                                     capture_output=True)
            r["patch"] = "applies" if applied.returncode == 0 else "FAILS: " + _tail(applied.stderr)
            if applied.returncode == 0:
                r["patched_rc"], r["patched_error"] = run_script(entry, fresh, timeout)
            if rounds and r["patched_rc"] == 0:
                copies = {"original": _copy(entry, corpus, Path(tmp) / "original"), "patched": fresh}
                r["whole"] = whole_runs(entry, copies, rounds, seeds, timeout)
    r["verdict"] = verdict(r)
    return r


def whole_runs(entry: dict[str, Any], copies: dict[str, Path], rounds: int, seeds: int,
               timeout: float) -> dict[str, Any]:
    """The original and the patched copy run whole, interleaved: the speed-up and the gate."""
    cap = {"PITSTOP_CORPUS_MAX_STEPS": str(entry["max_steps"])} if entry.get("max_steps") else {}
    run = {**entry, "env": {**entry.get("env", {}), **cap}}
    measured = train_scripts.measure(run, copies, rounds, timeout)
    seeded = [s for s in (train_scripts.once(run, copies["original"], timeout, seed=k) for k in range(1, seeds))
              if s["rc"] == 0 and s["losses"]]
    lengths = [len(r) for m in measured.values() for r in m["losses"]] + [len(s["losses"]) for s in seeded]
    at = min(lengths, default=0)
    admitted = train_scripts.gate(measured["original"], seeded, at)
    base, mine = measured["original"], measured["patched"]
    paired = [b / p for b, p in zip(base["runs_ms"], mine["runs_ms"], strict=False)]
    return {"rounds": rounds, "rc": {n: m["rc"] for n, m in measured.items()}, "loss_at": at, "gate": admitted,
            "step_ms": {n: m["step_ms"] for n, m in measured.items()},
            "runs_ms": {n: m["runs_ms"] for n, m in measured.items()},
            "loadavg": {n: m["loadavg"] for n, m in measured.items()},
            "speedup": base["step_ms"] / mine["step_ms"] if base["step_ms"] and mine["step_ms"] else None,
            "paired": [min(paired), max(paired)] if paired else None,
            "losses": {n: train_scripts.final_loss(m, at) for n, m in measured.items()},
            "inside": train_scripts._inside(mine, at, admitted)}


def whole_line(w: dict[str, Any]) -> str:
    """The whole-run re-measurement in one line."""
    if not w["speedup"]:
        return f"{'':20} whole runs: not measured (exit codes {w['rc']})"
    lo, hi = w["paired"]
    noise = " within noise" if lo <= 1 <= hi else ""
    gate = {None: "no gate (fewer than 2 original runs)", True: "in the gate", False: "OUTSIDE the gate"}[w["inside"]]
    losses = ", ".join(f"{n} {v:.4f}" for n, v in w["losses"].items() if v is not None)
    loads = [x for v in w["loadavg"].values() for x in v]
    return (f"{'':20} whole runs ({w['rounds']} rounds, load {min(loads):.1f}-{max(loads):.1f}): step "
            f"{w['step_ms']['original']:.1f} -> {w['step_ms']['patched']:.1f} ms, x{w['speedup']:.2f} "
            f"[rounds {lo:.2f}-{hi:.2f}]{noise}; loss at step {w['loss_at']}: {losses}, {gate}")


def verdict(r: dict[str, Any]) -> str:
    if r["plain_rc"] != 0:
        return "BROKEN"
    if r["traceback"] or r["rc"] not in (0, 1, 2):
        return "CRASH"
    if r["patch"].startswith("FAILS") or (r["patched_rc"] not in (None, 0)):
        return "PATCH FAILS"
    if r["rc"] == 2:
        return "OK" if r["expect"] == "refuse" else "REFUSED"
    if r["expect"] == "refuse":
        return "ACCEPTED"
    return "OK" if r["rc"] == 0 else "NO RESULT"  # exit 1: the reference failed or could not be measured


def line(r: dict[str, Any]) -> str:
    won = f"{r['winner']} (x{r['predicted']:.2f})" if r["winner"] and r["predicted"] else (r["winner"] or "-")
    patch = f"patch {r['patch_lines']} lines {r['patch']}" + (f", runs: exit {r['patched_rc']}"
                                                               if r["patched_rc"] is not None else "")
    return (f"{r['name']:<20} expect {r['expect']:<6} exit {r['rc']}  {r['search_s']:5.0f} s (load "
            f"{r['loadavg'][0]:.1f}-{r['loadavg'][1]:.1f})  winner {won}  "
            + (patch if r["patch_lines"] else "no patch")
            + (f"  error: {r['error']}" if r["error"] else "") + f"  -> {r['verdict']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these scripts")
    ap.add_argument("--budget-s", type=float, default=120, help="each search's --time-budget-s (default 120)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for a run without pitstop (default 300)")
    ap.add_argument("--corpus", type=Path, help="folder of OWNER+NAME/COMMIT/PATH files")
    ap.add_argument("--json", type=Path, help="write every result here, after each script")
    ap.add_argument("--remeasure", type=int, default=0, metavar="R",
                    help="run the original and the patched script whole, interleaved over R rounds (default 0: off)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the original's runs for the gate (default 3)")
    args = ap.parse_args()
    todo = entries()
    if args.only:
        unknown = set(args.only) - {e["name"] for e in todo}
        if unknown:
            ap.error(f"--only: no script named {', '.join(sorted(unknown))} in {MANIFEST.name}")
        todo = [e for e in todo if e["name"] in args.only]
    corpus, missing = doctor.find_corpus(todo, args.corpus)
    if missing or corpus is None:
        print(f"train_heldout: the third-party scripts are not here ({', '.join(missing)}); run "
              f"`python benchmarks/doctor_realworld.py --collect MIRRORS` first. Skipped.")
        return 0
    results = []
    for entry in todo:
        results.append(bench(entry, corpus, args.budget_s, args.timeout, args.remeasure, args.seeds))
        print(line(results[-1]), flush=True)
        if results[-1].get("whole"):
            print(whole_line(results[-1]["whole"]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    counts = collections.Counter(r["verdict"] for r in results)
    print(f"{len(results)} held-out scripts: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
