"""Does `pitstop train SCRIPT` make real training scripts faster, as a patch, and do they still train
the same? (issue 25)

For each script of `benchmarks/scripts_corpus.json` (nanoGPT, pytorch/examples word_language_model,
dcgan, mnist, imagenet, Lightning's transformer example; files git-ignored, see
scripts_corpus.py):

1. the search: `pitstop train --time-budget-s B --json --patch SCRIPT ARGS` in a prepared copy (a git
   work tree), its wall time, exit code, winner and predicted speed-up; with `--load`, the same
   search twice more while one busy process per core runs (`while True: pass`);
2. the patch applied with `git apply` to a fresh copy (whether it applies);
3. the re-measurement, quiet (no busy process): the original script, each patched copy, and the
   hand-written edit of the manifest (`hand_edit`: bf16 autocast around forward and loss plus the
   fused, else foreach, optimizer; on a CPU without native bfloat16, where autocast is emulated
   and many times slower, its optimizer part alone) each run as whole processes (`python SCRIPT ARGS` under the
   step-timing wrapper), interleaved over `--rounds` rounds in rotating order. Per copy: the median
   time between optimizer steps (the first two steps left out) and the loss at the last step every
   copy reached.
4. the gate, as `pitstop train` draws it: the original run whole once more with each of `--seeds` - 1
   further seeds (`PITSTOP_CORPUS_SEED`, pitstop's replica seeding: k added to every seed the script
   sets), the band of the original's losses after the last common step over all its seeds, widened by
   5% of their decrease (`pitstop.train.fidelity.band`); a patched copy's runs are judged as the gate
   judges a variant's (`fidelity.finals_verdict`): every run in the band, or their mean in it and no
   run further outside it than the original's own range (an unseeded script's runs are draws).

It prints one line per script and copy: step ms, speed-up over the original, ratio to the hand edit,
the loss, the patch's lines; then the targets of issue 25 as met / not met. Load average is printed
with every timing; on a busy machine the figures are indicative only.

With `--device cuda`, the scripts whose manifest entry has a `cuda` block run on the GPU (issue 45's
three roles, each block's `role`): its `args` follow the entry's own less its `drop_args` (nanoGPT's
configurator takes the last value: `--device=cuda` and a GPT-2-small shape; gcommands loses
`--no-cuda`), its `techniques` are searched unless `--techniques` is given (the word LM's
`precision=fp16-autocast`: the fp16 + GradScaler path where bf16 would win), and the hand reference
is the unmodified script run with its own mixed-precision option (`hand_args`, nanoGPT's
`--dtype=bfloat16`) instead of the CPU hand edit; a block without `hand_args` has none (an
input-bound entry keeps its hand-set loaders).

    python benchmarks/train_scripts.py [--only nanogpt dcgan] [--budget-s 300] [--rounds 3] [--load]
                                       [--seeds 3] [--device cuda] [--json out.json]
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
import scripts_corpus as corpus  # noqa: E402
import scripts_corpus_steps as steps  # noqa: E402
import train_scripts_input as inputs  # noqa: E402


def cuda_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries with a `cuda` block, as they run on the GPU: the block's `args` after the entry's own
    less its `drop_args`, its `hand_args` (absent: no hand reference but an input-bound entry's loaders)
    and its `techniques` (what `--techniques` does not override)."""
    out = []
    for e in entries:
        block = e.get("cuda")
        if block:
            args = [a for a in e["args"] if a not in block.get("drop_args", [])] + block["args"]
            out.append({**e, "args": args, "hand_args": block.get("hand_args"), "techniques": block.get("techniques")})
    return out


def prepare(entry: dict[str, Any], root: Path, hand: bool | str = False) -> Path:
    """A copy of the script's files in a git work tree under ``root``; its folder."""
    cwd = corpus.prepare(entry, root, hand=hand)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return cwd


def search(entry: dict[str, Any], cwd: Path, budget_s: float, tag: str, techniques: str | None = None
           ) -> dict[str, Any]:
    """One `pitstop train` search on the prepared copy: its outcome and the patch."""
    out, patch = cwd / f"train-{tag}.json", cwd / f"speedup-{tag}.diff"
    argv = [sys.executable, "-m", "pitstop", "train", "--time-budget-s", str(budget_s), "--json", str(out),
            *(["--techniques", techniques] if techniques else []),
            "--patch", str(patch), Path(entry["path"]).name, "--", *entry["args"]]  # after `--`: the script's own
    # options, even those pitstop also has (imagenet's --seed)
    load = os.getloadavg()[0]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=corpus.environ(entry), capture_output=True, text=True,
                          timeout=budget_s * 3 + 300)
    wall = time.monotonic() - start
    doc = json.loads(out.read_text()) if out.exists() else {}
    winner = doc.get("winner") or {}
    return {"tag": tag, "rc": proc.returncode, "search_s": wall, "loadavg": [load, os.getloadavg()[0]],
            "winner": winner.get("variant"), "predicted": (winner.get("speedup") or {}).get("median"),
            "changes": (doc.get("script") or {}).get("changes", []),
            "input_wait": (doc.get("script") or {}).get("input_wait"),
            "stderr": proc.stderr[-3000:] if proc.returncode else "",  # why a search failed, kept
            "run_length": (doc.get("search") or {}).get("run_length"),
            "patch": patch.read_text() if patch.exists() else "",
            "machine": (doc.get("environment") or {}).get("load"),
            "rows": [_row(r) for r in doc.get("results", [])],  # why a variant lost, kept with the figures
            "error": proc.stderr.strip().splitlines()[-1] if proc.returncode and proc.stderr.strip() else "",
            "failed": doc.get("failed") or ""}  # why a search ended with no winner (exit 1), from its JSON


def _row(r: dict[str, Any]) -> dict[str, Any]:
    """A search's result row, in brief: stage, variant, status, its speed-up and verdict, its reason."""
    speed = r.get("speedup") or {}
    return {"stage": r.get("stage"), "variant": r.get("variant"), "status": r.get("status"),
            "speedup": speed.get("median"), "verdict": speed.get("verdict"), "reason": r.get("reason")}


def applied(entry: dict[str, Any], root: Path, patch: str) -> tuple[Path | None, str]:
    """A fresh copy with ``patch`` applied by git apply: its folder, or None and git's message."""
    cwd = prepare(entry, root)
    if not patch:
        return cwd, "no patch (the unmodified script stays)"
    proc = subprocess.run(["git", "apply", "-"], cwd=root, input=patch, text=True, capture_output=True)
    return (cwd, "applies") if proc.returncode == 0 else (None, proc.stderr.strip()[:200])


def measure(entry: dict[str, Any], copies: dict[str, Path], rounds: int, timeout: float,
            runs_as: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Each copy run whole ``rounds`` times, interleaved in rotating order: step times and losses
    (``runs_as``: a copy run with another entry's arguments, the GPU's hand reference)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in copies}
    names = list(copies)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            runs[name].append(once((runs_as or {}).get(name, entry), copies[name], timeout))
    return {name: summary(rs) for name, rs in runs.items()}


def once(entry: dict[str, Any], cwd: Path, timeout: float, seed: int = 0) -> dict[str, Any]:
    log = Path(tempfile.mkstemp(prefix="steps-", suffix=".txt", dir=cwd)[1])
    env = {**corpus.environ(entry), "PITSTOP_CORPUS_STEPS": str(log), "PITSTOP_CORPUS_SEED": str(seed)}
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        proc = subprocess.run(corpus.command(entry), cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        rc = 124
    wall = time.perf_counter() - start  # the whole process: start-up, imports, workers, every step, exit
    lines = log.read_text().splitlines()
    log.unlink()
    return {"rc": rc, "step_s": steps.median_step_s(steps.step_times(lines)), "losses": steps.losses_of(lines),
            "loadavg": load, "wall_s": wall}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if r["rc"] == 0 and r["step_s"]]
    return {"rc": [r["rc"] for r in runs], "step_ms": statistics.median(r["step_s"] for r in ok) * 1e3 if ok else None,
            "runs_ms": [r["step_s"] * 1e3 for r in ok], "losses": [r["losses"] for r in ok],
            "wall_s": statistics.median(r["wall_s"] for r in ok) if ok and "wall_s" in ok[0] else None,
            "walls_s": [r.get("wall_s") for r in ok],
            "loadavg": [r["loadavg"] for r in runs]}


WINDOW = 10  # the loss "after N steps": the mean of the last 10 steps up to N (one step's batch is noise)


def _tail(run: list[float], at: int) -> float:
    return statistics.mean(run[max(0, at - WINDOW):at])


def final_loss(measured: dict[str, Any], at: int) -> float | None:
    """The loss after ``at`` steps (the mean of the last ``WINDOW`` steps), averaged over the runs."""
    values = [_tail(run, at) for run in measured["losses"] if len(run) >= at]
    return statistics.mean(values) if values else None


def gate(original: dict[str, Any], seeded: list[dict[str, Any]], at: int,
         tolerance: float = 0.05) -> dict[str, Any] | None:
    """The band a patched copy's loss after ``at`` steps must lie in: pitstop train's trajectory gate
    (``fidelity.band``) over the original's runs, its seed-0 runs and one run per further seed, each
    as (its first ``WINDOW`` steps' mean, its mean of the ``WINDOW`` steps up to ``at``)."""
    from pitstop.train.fidelity import band

    runs = [run for run in original["losses"] + [s["losses"] for s in seeded] if len(run) >= at >= 1]
    if len(runs) < 2:
        return None
    return band([[statistics.mean(run[:WINDOW]), _tail(run, at)] for run in runs], tolerance)


def loss_spread(measured: dict[str, Any], at: int) -> float:
    """The range of one copy's loss at step ``at`` over its runs (0 for a script that repeats itself
    exactly: a seeded one; an unseeded shuffle differs run to run)."""
    values = [_tail(run, at) for run in measured["losses"] if len(run) >= at]
    return max(values) - min(values) if len(values) > 1 else 0.0


def bench(entry: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"train-scripts-{entry['name']}-") as tmp:
        tmp_path = Path(tmp)
        work = prepare(entry, tmp_path / "search")
        techniques = args.techniques or entry.get("techniques")  # a GPU block may name its own
        searches = [search(entry, work, args.budget_s, "quiet", techniques)]
        if args.load:
            for k in (1, 2):
                burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                           for _ in range(os.cpu_count() or 1)]
                try:
                    searches.append(search(entry, work, args.budget_s, f"loaded{k}", techniques))
                finally:
                    for b in burners:
                        b.kill()
                        b.wait()
        on_gpu = args.device == "cuda"
        hand = False if on_gpu else True if _native_bf16() else "fp32"  # the GPU's: the script's own option
        copies = {"original": prepare(entry, tmp_path / "original")}
        gpu_hand = on_gpu and entry.get("hand_args") is not None  # the script's own mixed precision, if it has one
        if (entry.get("hand_edit") and not on_gpu) or gpu_hand:  # an input-bound entry's hand references: its loaders
            copies["hand"] = prepare(entry, tmp_path / "hand", hand=hand)
        copies.update(inputs.copies(entry, tmp_path, prepare))
        runs_as = {"hand": {**entry, "args": entry["args"] + entry["hand_args"]}} if gpu_hand else {}
        for s in searches:
            cwd, s["applies"] = applied(entry, tmp_path / s["tag"], s["patch"])
            if cwd is not None and s["patch"]:
                copies[s["tag"]] = cwd
                s["same_as_hand"] = "hand" in copies and _same_files(tmp_path / s["tag"], tmp_path / "hand")
        measured = measure(entry, copies, args.rounds, args.timeout, runs_as)
        seeded = [once(entry, copies["original"], args.timeout, seed=k) for k in range(1, args.seeds)]
    at = min((len(run) for m in measured.values() for run in m["losses"]), default=0)
    at = min([at] + [len(s["losses"]) for s in seeded if s["rc"] == 0 and s["losses"]])
    admitted = gate(measured["original"], [s for s in seeded if s["rc"] == 0], at)
    return {"name": entry["name"], "kind": entry["kind"], "device": args.device, "searches": searches,
            "measured": measured, "loss_at": at,
            "seeded": seeded, "gate": admitted,
            "inside": {name: _inside(m, at, admitted) for name, m in measured.items()},
            "losses": {name: final_loss(m, at) for name, m in measured.items()},
            "loss_spread": {name: loss_spread(m, at) for name, m in measured.items()}}


def _inside(measured: dict[str, Any], at: int, admitted: dict[str, Any] | None) -> bool | None:
    """Whether a copy's runs (each its mean of the last ``WINDOW`` steps up to ``at``) pass the gate."""
    from pitstop.train.fidelity import finals_verdict

    values = [_tail(run, at) for run in measured["losses"] if len(run) >= at]
    if admitted is None or not values:
        return None
    return finals_verdict(values, admitted) is None


def report(r: dict[str, Any]) -> list[str]:
    m, base = r["measured"], r["measured"]["original"]["step_ms"]
    hand, whole = m.get("hand", {}).get("step_ms"), m["original"].get("wall_s")
    lines = [f"{r['name']} ({r['kind']}): loss at step {r['loss_at']} (the mean of steps "
             f"{max(1, r['loss_at'] - WINDOW + 1)}-{r['loss_at']})"]
    admitted = r.get("gate")
    if admitted:
        lines.append(f"  gate: [{admitted['low']:.4f}, {admitted['high']:.4f}] (the original's {admitted['seeds']} "
                     f"runs over {1 + len(r.get('seeded', []))} seeds end at "
                     f"{', '.join(f'{f:.4f}' for f in admitted['finals'])}; widened by {admitted['widened_by']:.4f})")
    for s in r["searches"]:
        lines.append(f"  search {s['tag']:8} exit {s['rc']}  {s['search_s']:5.0f} s  load {s['loadavg'][0]:.1f}->"
                     f"{s['loadavg'][1]:.1f}  winner {s['winner']} (predicted {s['predicted'] or 1:.2f}x)  patch: "
                     f"{s['applies'] if 'applies' in s else '-'}  {s['error'] or s.get('failed', '')}")
        if s.get("input_wait"):
            lines.append("      input wait (share of the step): " + ", ".join(
                f"{v} {w['share']:.0%}" for v, w in s["input_wait"].items() if w.get("share") is not None))
        if s.get("run_length"):
            lines.append(f"      run length: {s['run_length'].get('steps')} steps ({s['run_length'].get('source')})")
        for change in s["changes"]:
            lines.append(f"      {change}")
        if s.get("same_as_hand"):
            lines.append("      (the patched copy's files are the hand edit's, byte for byte)")
    for name, got in m.items():
        ms = got["step_ms"]
        speed = f"{base / ms:.2f}x" if base and ms else "-"
        vs_hand = f"{hand / ms:.2f}" if hand and ms else "-"
        loss = r["losses"].get(name)
        wall = got.get("wall_s")
        lines.append(f"  {name:9} step {ms or 0:8.1f} ms  speed-up {speed:>6}  vs hand {vs_hand:>5}  "
                     f"whole {wall or 0:6.1f} s ({f'{whole / wall:.2f}x' if whole and wall else '-'})  "
                     f"loss {loss if loss is None else round(loss, 4)}{_mark(r, name)}  "
                     f"runs {[round(x, 1) for x in got['runs_ms']]} "
                     f"load {[round(x, 1) for x in got['loadavg']]}")
    return lines


def _mark(r: dict[str, Any], name: str) -> str:
    inside = (r.get("inside") or {}).get(name)
    return "" if inside is None else (" (in the gate)" if inside else " (OUTSIDE the gate)")


def targets(results: list[dict[str, Any]]) -> list[str]:
    """Issue 25's targets over the scripts run, each met / not met with the figures behind it."""
    applies, speed, never_slower, hand, search_s, loaded, same = [], [], [], [], [], [], []
    identical: list[str] = []  # the patch is the hand edit itself (the same files)
    same_edit: list[str] = []  # a loaded search's patch is the quiet one's, byte for byte
    for r in results:
        m = r["measured"]
        base, by_hand = m["original"]["step_ms"], m.get("hand", {}).get("step_ms")
        quiet_patch = next((s.get("patch") or "" for s in r["searches"] if s["tag"] == "quiet"), None)
        for s in r["searches"]:
            search_s.append((r["name"], s["tag"], s["search_s"]))
            if s["tag"] != "quiet":
                if quiet_patch is not None and (s.get("patch") or "") == quiet_patch:
                    same_edit.append(f"{r['name']} {s['tag']}")  # the same files: within 5% by identity
                    continue
                quiet = m.get("quiet", m["original"])["step_ms"]
                got = m.get(s["tag"], m["original"])["step_ms"]
                if quiet and got:
                    loaded.append((r["name"], s["tag"], quiet / got))
                continue
            applies.append((r["name"], s.get("applies", "-")))
            got = m.get("quiet", m["original"])["step_ms"]
            if base and got:
                never_slower.append((r["name"], base / got))
                speed.append((r["name"], base / got))
            if s.get("same_as_hand"):
                identical.append(r["name"])
            elif by_hand and got:
                hand.append((r["name"], by_hand / got))
            patched, original = r["losses"].get("quiet"), r["losses"].get("original")
            inside = (r.get("inside") or {}).get("quiet")
            if patched is not None and original and inside is not None:
                same.append((r["name"], patched / original, inside))
            elif patched is not None and original:
                spread = sum((r.get("loss_spread") or {}).get(k, 0.0) for k in ("quiet", "original"))
                same.append((r["name"], patched / original, abs(patched - original) <= max(0.05 * original, spread)))

    def line(name: str, ok: bool, detail: str) -> str:
        return f"  {'met    ' if ok else 'NOT met'}  {name}: {detail}"

    fmt = lambda pairs: ", ".join(f"{n} {x:.2f}x" for n, x in pairs)  # noqa: E731
    native = _native_bf16() or any(r.get("device") == "cuda" for r in results)
    out = ["targets (issue 25):",
           line("the patch applies (or no patch)", all(a in ("applies", "no patch (the unmodified script stays)")
                                                      for _, a in applies), ", ".join(f"{n}: {a}" for n, a in applies)),
           line(">= 1.3x where the script is fp32 and compute-bound", any(x >= 1.3 for _, x in speed), fmt(speed))
           if native else f"  n/a      >= 1.3x where the script is fp32 and compute-bound: this CPU has no native "
                          f"bfloat16 (no avx512_bf16 or amx_bf16; the target is for one that has): {fmt(speed)}",
           line(f"trains the same (the patch's runs, each a mean of {WINDOW} steps up to the last common step, "
                "pass the gate drawn from the original's seeds; saved results without seeds: within 5% of the "
                "original's loss or the copies' run-to-run range); patched / original loss",
                all(ok for *_, ok in same), ", ".join(f"{n} {x:.3f}" for n, x, _ in same)),
           line("never slower than 0.97x", all(x >= 0.97 for _, x in never_slower), fmt(never_slower)),
           line("within 5% of the hand edit (patched / hand step time)", all(x >= 0.95 for _, x in hand),
                ", ".join([fmt(hand)] * bool(hand) + [f"{n}: the same edit" for n in identical])),
           line("search <= 10 minutes", all(t <= 600 for *_, t in search_s),
                ", ".join(f"{n} {tag} {t:.0f} s" for n, tag, t in search_s))]
    if loaded or same_edit:
        out.append(line("loaded searches' patches within 5% of the quiet one's (re-measured quietly; the same "
                         "patch is within 5% by identity, whatever two whole runs of it say)",
                        all(x >= 0.95 for *_, x in loaded),
                        ", ".join([f"{n} {tag} {x:.2f}" for n, tag, x in loaded]
                                  + [f"{t}: the same patch" for t in same_edit])))
    return out + inputs.targets(results, line)


def _same_files(a: Path, b: Path) -> bool:
    """Whether two prepared copies hold the same files, byte for byte (git's folder left out): a
    patch that *is* the hand edit is within 5% of it by identity, whatever two whole runs of it say."""
    def files(root: Path) -> dict[str, bytes]:
        return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*"))
                if f.is_file() and ".git" not in f.relative_to(root).parts and not f.name.startswith("steps-")}

    return files(a) == files(b)


def _patch_is_hand(entry: dict[str, Any], patch: str) -> bool:
    """Whether ``patch`` applied to the script gives the hand edit's files (corpus files present)."""
    with tempfile.TemporaryDirectory() as tmp:
        cwd, applies = applied(entry, Path(tmp) / "patched", patch)
        prepare(entry, Path(tmp) / "hand", hand=True if _native_bf16() else "fp32")
        return cwd is not None and applies == "applies" and _same_files(Path(tmp) / "patched", Path(tmp) / "hand")


def _native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (the issue's targets are for an avx512_bf16 one)."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--budget-s", type=float, default=300.0, help="pitstop train --time-budget-s (default 300)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved whole-process runs per copy (default 3)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per whole run (default 900)")
    ap.add_argument("--seeds", type=int, default=3,
                    help="the original's seeds the gate is drawn from, seed 0 included (default 3)")
    ap.add_argument("--load", action="store_true", help="also search twice with one busy process per core")
    ap.add_argument("--techniques", metavar="A,B", help="pitstop train --techniques (default: all of them)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: the entries with a `cuda` block, on the GPU (default cpu)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--summarize", nargs="+", type=Path, metavar="JSON",
                    help="print the tables and targets of saved --json results (several: later ones replace a "
                         "script's earlier result) and exit")
    args = ap.parse_args()
    if args.summarize:
        merged: dict[str, dict[str, Any]] = {}
        corpus_entries = {e["name"]: e for e in corpus.load_manifest()}
        for path in args.summarize:
            for r in json.loads(path.read_text()):
                at = r["loss_at"]
                r["losses"] = {n: final_loss(m, at) for n, m in r["measured"].items()}  # as this version reads them
                r["loss_spread"] = {n: loss_spread(m, at) for n, m in r["measured"].items()}
                if r.get("seeded"):
                    r["gate"] = gate(r["measured"]["original"], [s for s in r["seeded"] if s["rc"] == 0], at)
                    r["inside"] = {n: _inside(m, at, r["gate"]) for n, m in r["measured"].items()}
                for s in r["searches"]:  # saved before the comparison existed: made again from the patch
                    if "same_as_hand" not in s and s.get("patch") and s.get("applies") == "applies":
                        s["same_as_hand"] = _patch_is_hand(corpus_entries[r["name"]], s["patch"])
                merged[r["name"]] = r
        for r in merged.values():
            print("\n".join(report(r)))
        print("\n".join(targets(list(merged.values()))))
        return 0
    entries = [e for e in corpus.load_manifest() if not args.only or e["name"] in args.only]
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("--device cuda: no CUDA device here")
            return 2
        entries = cuda_entries(entries)
    absent = corpus.missing(entries)
    if absent:
        print(f"corpus files absent for {', '.join(absent)}: run python benchmarks/scripts_corpus.py --collect "
              "/work/.mirror first (the files are never committed)")
        return 0
    if shutil.which("git") is None:
        print("git is needed (the patch is applied with git apply)")
        return 0
    results = []
    if args.device == "cuda":
        print(f"on {torch.cuda.get_device_name()} (bf16 native); load average {os.getloadavg()[0]:.2f}", flush=True)
    else:
        print(f"native bfloat16 on this CPU: {'yes' if _native_bf16() else 'no (AVX2 or older: bf16 is emulated)'}; "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
    for entry in entries:
        result = bench(entry, args)
        results.append(result)
        print("\n".join(report(result)), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    print("\n".join(targets(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
