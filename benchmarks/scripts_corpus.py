"""A corpus of real public training scripts for `pitstop train` / `pitstop profile` benchmarks.

`benchmarks/scripts_corpus.json` lists public training scripts (pytorch/examples, nanoGPT, Lightning,
Hugging Face) by repo, commit and path, with the arguments, environment, data set-up and the (rare,
recorded) data-only edits that make each run here: on CPU, offline, on synthetic or in-repo data.
Each entry also carries `hand_edit`, exact replacements that turn the script into a hand-written
"bf16 autocast around forward+loss + fused (or foreach) optimizer" version: the reference a tool's
patch is compared with. The third-party files are never committed: they live in the git-ignored
`benchmarks/.corpus/scripts/OWNER+NAME/COMMIT/PATH` (or `--corpus DIR`); packages an entry needs
that the venv lacks (`pip`, e.g. accelerate for the HF Trainer) go to `benchmarks/.corpus/site/`.
Data and environment stand-ins come from `benchmarks/doctor_realworld_shims/` (first on PYTHONPATH; an
entry's `shims` list narrows them to the packages it names).

    python benchmarks/scripts_corpus.py --collect /work/.mirror   # copy files from git mirrors (+ pip)
    python benchmarks/scripts_corpus.py --check [--only NAME...]  # run each plain: exit, wall, step time
    python benchmarks/scripts_corpus.py --check --hand            # plain, then with hand_edit: speed-up

The step time is the median time between two `step()`s of one optimizer, measured from outside the
script by `benchmarks/scripts_corpus_steps.py` (a global optimizer step hook, nothing else).

For other benchmarks: `load_manifest()`, `corpus_dir()`, `missing(entries)`, `prepare(entry, root,
hand=False) -> cwd`, `environ(entry)`, `command(entry, steps=True)`. With the files absent the CLI says
so in one line and exits 0.
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
import doctor_realworld as _doctor  # noqa: E402  (corpus layout, collect, shims: shared with the doctor bench)
import scripts_corpus_steps as _steps  # noqa: E402

MANIFEST = HERE / "scripts_corpus.json"
CORPORA = (HERE / ".corpus" / "scripts", Path("/work/corpus/scripts/files"))
SITE = HERE / ".corpus" / "site"
STEPS = HERE / "scripts_corpus_steps.py"
SHIMS = _doctor.SHIMS
SRC = _doctor.SRC


def load_manifest(path: Path = MANIFEST) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["scripts"]


def corpus_dir(corpus: Path | None = None) -> Path | None:
    """The corpus folder in use: the one given, else the first that exists, else None."""
    if corpus is not None:
        return corpus
    return next((c for c in CORPORA if c.is_dir()), None)


def missing(entries: list[dict[str, Any]], corpus: Path | None = None) -> list[str]:
    """Names of the entries whose files (or pip packages) are not here."""
    corpus = corpus_dir(corpus)
    out = []
    for e in entries:
        files_ok = corpus is not None and all(_doctor.corpus_file(corpus, e, p).exists() for p in e["files"])
        pip_ok = all((SITE / _dist_marker(req)).exists() for req in e.get("pip", []))
        if not (files_ok and pip_ok):
            out.append(e["name"])
    return out


def _dist_marker(requirement: str) -> str:
    name = requirement.split("==")[0].strip().lower().replace("-", "_")
    return f".installed-{name}"


def collect(mirrors: Path, corpus: Path, entries: list[dict[str, Any]]) -> int:
    """Copy every entry's files out of the git mirrors at its recorded commit; install its `pip` packages."""
    n = _doctor.collect(mirrors, corpus, entries)
    reqs = sorted({r for e in entries for r in e.get("pip", [])})
    if reqs:
        SITE.mkdir(parents=True, exist_ok=True)
        # --no-deps: only the named packages, into a folder of their own; the venv is left as it is
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(SITE), *reqs], check=True
        )
        for r in reqs:
            (SITE / _dist_marker(r)).write_text(r + "\n")
    return n


def _apply(root: Path, edits: list[dict[str, str]], name: str, what: str) -> None:
    for edit in edits:
        target = root / edit["file"]
        text = target.read_text()
        if text.count(edit["old"]) != 1:
            raise SystemExit(
                f"{name}: {what} of {edit['file']} expects its old text exactly once, found "
                f"{text.count(edit['old'])}: the file is not the recorded commit's"
            )
        target.write_text(text.replace(edit["old"], edit["new"]))


def hand_edits(entry: dict[str, Any], bf16: bool = True) -> list[dict[str, str]]:
    """The entry's hand edit; without ``bf16`` (a CPU that only emulates bfloat16, where autocast
    makes every step many times slower) its optimizer part alone: the edits that turn on
    autocast or a bf16 precision flag are left out, and a ``bf16=True`` beside the optimizer flag
    in one line (the HF Trainer's arguments) is taken out of it."""
    if bf16:
        return list(entry.get("hand_edit", []))
    kept = []
    for edit in entry.get("hand_edit", []):
        new = edit["new"].replace(" bf16=True,", "").replace("bf16=True, ", "")
        if "autocast" in new or "bf16" in new:
            continue
        kept.append({**edit, "new": new})
    return kept


def prepare(entry: dict[str, Any], root: Path, hand: bool | str = False, corpus: Path | None = None) -> Path:
    """Copy the entry's files under `root`, apply its edits (and its hand_edit if `hand`: "fp32" for
    its optimizer part alone, see ``hand_edits``), run its setup.

    Returns the folder to run the script in (the script's own folder)."""
    corpus = corpus_dir(corpus)
    if corpus is None:
        raise FileNotFoundError("no corpus folder: run scripts_corpus.py --collect MIRRORS first")
    for path in entry["files"]:
        dest = root / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_doctor.corpus_file(corpus, entry, path), dest)
    _apply(root, entry.get("edits", []), entry["name"], "edit")
    if hand:
        _apply(root, hand_edits(entry, bf16=hand != "fp32"), entry["name"], "hand_edit")
    cwd = (root / entry["path"]).parent
    for cmd in entry.get("setup", []):
        argv = [sys.executable if a == "{python}" else a for a in cmd]
        proc = subprocess.run(argv, cwd=cwd, env=environ(entry), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{entry['name']}: setup {argv[1:2]} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return cwd


def shims(entry: dict[str, Any]) -> Path:
    """The shim folder for the entry: all of doctor_realworld_shims/, or only the packages its `shims` lists
    (shared with the doctor bench: `doctor_realworld.shim_folder`)."""
    return _doctor.shim_folder(entry)


def environ(entry: dict[str, Any]) -> dict[str, str]:
    """The environment to run the entry in: the shims (and the corpus site folder) first on PYTHONPATH."""
    env = dict(os.environ, **entry.get("env", {}))
    path = [str(shims(entry))] + ([str(SITE)] if entry.get("pip") else []) + [str(SRC)]
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.setdefault("OMP_NUM_THREADS", "2")
    return env


def command(entry: dict[str, Any], steps: bool = True) -> list[str]:
    """argv for running the prepared script from its folder (under the step-timing wrapper if `steps`)."""
    script = [Path(entry["path"]).name, *entry["args"]]
    return [sys.executable, str(STEPS), *script] if steps else [sys.executable, *script]


def run(entry: dict[str, Any], cwd: Path, timeout: float) -> dict[str, Any]:
    """Run the prepared script once under the step wrapper: exit code, wall time, steps, median step."""
    log = Path(tempfile.mkstemp(prefix="steps-", suffix=".txt", dir=cwd)[1])
    env = environ(entry)
    env["PITSTOP_CORPUS_STEPS"] = str(log)
    start = time.perf_counter()
    try:
        proc = subprocess.run(command(entry), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, err = 124, _doctor._text(exc.stderr) + f"\ntimed out after {timeout:.0f} s"
    wall = time.perf_counter() - start
    per = _steps.step_times(log.read_text().splitlines())
    med = _steps.median_step_s(per)
    return {
        "rc": rc,
        "wall_s": wall,
        "steps": sum(map(len, per.values())),
        "optimizers": len(per),
        "step_ms": None if med is None else med * 1000,
        "stderr_tail": err[-2500:] if rc else "",
    }


def check(entry: dict[str, Any], hand: bool, timeout: float, corpus: Path | None) -> dict[str, Any]:
    result: dict[str, Any] = {"name": entry["name"], "kind": entry["kind"]}
    modes = ("plain", "hand") if hand else ("plain",)
    for mode in modes:
        with tempfile.TemporaryDirectory(prefix=f"scripts-corpus-{entry['name']}-") as tmp:
            try:
                cwd = prepare(entry, Path(tmp) / "repo", hand=mode == "hand", corpus=corpus)
            except (RuntimeError, SystemExit) as exc:
                result[mode] = {
                    "rc": "setup",
                    "wall_s": 0.0,
                    "steps": 0,
                    "optimizers": 0,
                    "step_ms": None,
                    "stderr_tail": str(exc),
                }
                continue
            result[mode] = run(entry, cwd, timeout)
    return result


def _ms(v: float | None) -> str:
    return f"{v:8.1f}" if v is not None else "       -"


def line(r: dict[str, Any]) -> str:
    p = r["plain"]
    s = (
        f"{r['name']:<22} {r['kind']:<10} exit {p['rc']!s:>5}  wall {p['wall_s']:6.1f}s  steps {p['steps']:4d}"
        f"  step {_ms(p['step_ms'])} ms"
    )
    if "hand" in r:
        h = r["hand"]
        ratio = f"x{p['step_ms'] / h['step_ms']:.2f}" if p["step_ms"] and h["step_ms"] else "-"
        s += (
            f"  | hand: exit {h['rc']!s:>5}  wall {h['wall_s']:6.1f}s  steps {h['steps']:4d}"
            f"  step {_ms(h['step_ms'])} ms  speed-up {ratio}"
        )
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--corpus", type=Path, help="folder of OWNER+NAME/COMMIT/PATH files")
    ap.add_argument("--collect", type=Path, metavar="MIRRORS", help="fill the corpus from git mirrors and exit")
    ap.add_argument("--check", action="store_true", help="run each script plain once: exit, wall, step time")
    ap.add_argument("--hand", action="store_true", help="with --check: also run it with its hand_edit applied")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these scripts")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    entries = load_manifest(args.manifest)
    if args.only:
        unknown = set(args.only) - {e["name"] for e in entries}
        if unknown:
            ap.error(f"--only: no script named {', '.join(sorted(unknown))} in {args.manifest.name}")
        entries = [e for e in entries if e["name"] in args.only]
    if args.collect:
        corpus = args.corpus or CORPORA[0]
        print(f"collected {collect(args.collect, corpus, entries)} files into {corpus}")
        return 0
    if not args.check:
        ap.error("nothing to do: give --collect MIRRORS or --check")
    gone = missing(entries, args.corpus)
    if gone:
        print(
            f"scripts_corpus: the third-party scripts are not here ({', '.join(gone)} missing from "
            f"{corpus_dir(args.corpus) or ' or '.join(map(str, CORPORA))}); fetch them and run with "
            "--collect MIRRORS. Skipped."
        )
        return 0
    results = []
    for entry in entries:
        results.append(check(entry, args.hand, args.timeout, args.corpus))
        print(line(results[-1]), flush=True)
        for mode in ("plain", "hand"):
            tail = results[-1].get(mode, {}).get("stderr_tail")
            if tail:
                print(f"  {mode} stderr: " + tail.strip().splitlines()[-1][:300], flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    ok = [r for r in results if r["plain"]["rc"] == 0]
    print(f"{len(ok)}/{len(results)} ran plain with exit 0", end="")
    if args.hand:
        sp = [
            r["plain"]["step_ms"] / r["hand"]["step_ms"]
            for r in results
            if r["plain"]["step_ms"] and r.get("hand", {}).get("step_ms") and r["hand"]["rc"] == 0
        ]
        print(f"; hand-edit speed-up median x{statistics.median(sp):.2f}" if sp else "", end="")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
