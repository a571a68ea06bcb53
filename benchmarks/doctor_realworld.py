"""Does `pitstop doctor` hold up on training scripts nobody here wrote? (issue 17)

Runs each public training script of `benchmarks/doctor_realworld.json` (pytorch/examples,
nanoGPT, Lightning's transformer example, the Hugging Face course's plain loop and Trainer: repo,
path, commit, arguments, recorded edits, expected verdict) plain
(`python script.py ARGS`) and under the doctor (`python -m pitstop doctor --json F
--fail-on never script.py ARGS`), interleaved (plain/doctor, then doctor/plain, ...), in one
prepared temp copy per script, and prints one line per script:

    exit codes plain/doctor (must be equal), output unchanged (the script's printed lines after
    masking timing numbers), median wall time of each and their ratio, the doctor's findings
    (code:severity), the optimizer steps it counted, and a verdict: OK, FINDINGS (a warning or
    error on a script expected correct), MISSED (an expected finding absent), OUTPUT CHANGED,
    CRASH (the doctor run failed where the plain run did not, or wrote no report), BROKEN (the
    plain run itself failed: the setup is wrong, not the doctor).

then a summary (warning/error findings on the correct scripts, median overhead). Wall times
include interpreter start-up and are taken on whatever machine this is: on a busy shared
machine they are indicative only.

The third-party files are never committed. They live in a git-ignored corpus folder
(`benchmarks/.corpus/doctor/`, else `/work/corpus/doctor/files/`, or `--corpus DIR`) as
`OWNER+NAME/COMMIT/PATH`; `--collect MIRRORS` fills it from git mirrors laid out as
`MIRRORS/OWNER+NAME/repo` (what the search tool's fetch gives). With the files absent the
script says so in one line and exits 0. Packages this machine lacks (torchvision, gymnasium,
matplotlib, requests, datasets, evaluate) are stood in for by `benchmarks/doctor_realworld_shims/` (data and
environments only), first on PYTHONPATH for both runs alike (an entry's `shims` list narrows them to
the packages it names).

    python benchmarks/doctor_realworld.py [--rounds 3] [--only mnist dcgan] [--json out.json]
    python benchmarks/doctor_realworld.py --collect /work/.mirror
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
SHIMS = HERE / "doctor_realworld_shims"
MANIFEST = HERE / "doctor_realworld.json"
CORPORA = (HERE / ".corpus" / "doctor", Path("/work/corpus/doctor/files"))
# timing and speed numbers a script prints: they differ between any two runs
TIMING = [r"\d+(?:\.\d+)?\s*(?:ms|s|sec)\b", r"ms/batch\s+[\d.]+", r"mfu\s+-?[\d.]+%", r"time:?\s+[\d.]+"]
NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def corpus_file(corpus: Path, entry: dict[str, Any], path: str) -> Path:
    return corpus / entry["repo"].replace("/", "+") / entry["commit"] / path


def collect(mirrors: Path, corpus: Path, entries: list[dict[str, Any]]) -> int:
    """Copy every manifest file out of the git mirrors at its recorded commit."""
    n = 0
    for entry in entries:
        base = mirrors / entry["repo"].replace("/", "+") / "repo"
        git = base / ".git" if (base / ".git" / "HEAD").exists() else base  # a work tree's or a bare mirror
        for path in entry["files"]:
            shown = subprocess.run(["git", "--git-dir", str(git), "show", f"{entry['commit']}:{path}"],
                                   capture_output=True)
            if shown.returncode != 0:  # the mirror absent, or without that commit: the rest still come
                print(f"skipped {entry['repo']}@{entry['commit'][:10]}:{path}: not in {git} "
                      f"(fetch the repository's mirror first)", file=sys.stderr)
                continue
            blob = shown.stdout
            dest = corpus_file(corpus, entry, path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(blob)
            n += 1
    return n


def find_corpus(entries: list[dict[str, Any]], given: Path | None) -> tuple[Path | None, list[str]]:
    """The corpus folder (``given``, else the first of ``CORPORA`` that exists) and the names of the
    entries whose files are not all in it."""
    corpus = given or next((c for c in CORPORA if c.is_dir()), None)
    return corpus, [e["name"] for e in entries if corpus is None
                    or not all(corpus_file(corpus, e, p).exists() for p in e["files"])]


def prepare(entry: dict[str, Any], corpus: Path, root: Path) -> Path:
    """A temp copy of the script's files with its edits applied and its setup run; its folder."""
    for path in entry["files"]:
        dest = root / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus_file(corpus, entry, path), dest)
    for edit in entry.get("edits", []):
        target = root / edit["file"]
        text = target.read_text()
        if text.count(edit["old"]) != 1:
            raise SystemExit(f"{entry['name']}: edit of {edit['file']} expects its old text exactly once, "
                             f"found {text.count(edit['old'])}: the file is not the recorded commit's")
        target.write_text(text.replace(edit["old"], edit["new"]))
    cwd = (root / entry["path"]).parent
    for command in entry.get("setup", []):
        argv = [sys.executable if a == "{python}" else a for a in command]
        subprocess.run(argv, cwd=cwd, env=environ(entry), check=True, capture_output=True)
    return cwd


def shim_folder(entry: dict[str, Any]) -> Path:
    """The shim folder for the entry: all of doctor_realworld_shims/, or only the packages its `shims` lists.

    A stand-in a script does not need can mislead a library that probes for it (torchmetrics, under
    Lightning, finds the torchvision and matplotlib shims and imports parts they lack; transformers finds
    torchvision)."""
    names = entry.get("shims")
    if names is None:
        return SHIMS
    folder = HERE / ".corpus" / ("shims-" + "-".join(sorted(names)) if names else "shims-none")
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        link = folder / name
        if not link.exists():
            link.symlink_to(SHIMS / name, target_is_directory=True)
    return folder


def environ(entry: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ, **entry.get("env", {}))
    env["PYTHONPATH"] = os.pathsep.join([str(shim_folder(entry)), str(SRC)])
    env.setdefault("OMP_NUM_THREADS", "2")
    return env


def run_once(entry: dict[str, Any], cwd: Path, doctor: bool, report: Path, timeout: float) -> dict[str, Any]:
    script = [Path(entry["path"]).name, *entry["args"]]
    head = ["-m", "pitstop", "doctor", "--json", str(report), "--fail-on", "never"] if doctor else []
    report.unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, *head, *script], cwd=cwd, env=environ(entry),
                              capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = 124, _text(exc.stdout), _text(exc.stderr) + f"\ntimed out after {timeout:.0f} s"
    wall = time.perf_counter() - start
    doc = json.loads(report.read_text()) if doctor and report.exists() else None
    return {"rc": rc, "stdout": out, "stderr": err, "wall_s": wall, "report": doc}


def _text(data: Any) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def masked(text: str, entry: dict[str, Any]) -> list[str]:
    lines = []
    for line in text.splitlines():
        for pattern in TIMING + entry.get("mask", []):
            line = re.sub(pattern, "<t>", line)
        if entry.get("mask_all_numbers"):
            line = re.sub(NUMBER, "#", line)
        lines.append(line.rstrip())
    return lines


def same_output(plain: str, doctored: str, entry: dict[str, Any]) -> tuple[bool, str]:
    """The doctor's stdout is the script's lines, then its report: compare the first len(plain) lines."""
    a, b = masked(plain, entry), masked(doctored, entry)
    head = b[: len(a)]
    if entry.get("compare") == "unordered":
        ok = collections.Counter(a) == collections.Counter(head)
    else:
        ok = a == head
    if ok:
        return True, ""
    diff = next((f"plain {x!r} vs doctor {y!r}" for x, y in zip(a, head, strict=False) if x != y),
                f"{len(a)} plain lines, doctor run printed {len(b)}")
    return False, diff


def evaluate(entry: dict[str, Any], runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    plain, doc = runs["plain"], runs["doctor"]
    rcs = (plain[0]["rc"], doc[0]["rc"])
    outputs = [same_output(p["stdout"], d["stdout"], entry) for p, d in zip(plain, doc, strict=False)]
    reports = [d["report"] for d in doc if d["report"] is not None]
    findings = {(f["code"], f["severity"]): f for r in reports for f in r["findings"]}
    serious = sorted({c for c, s in findings if s in ("warning", "error")})
    expected = entry["expected"]
    expected_codes = set() if expected == "correct" else set(expected)
    t_plain = statistics.median(p["wall_s"] for p in plain)
    t_doc = statistics.median(d["wall_s"] for d in doc)
    if rcs[0] != 0 and rcs[0] == rcs[1]:
        verdict = "BROKEN"
    elif any(p["rc"] != d["rc"] for p, d in zip(plain, doc, strict=False)) or len(reports) < len(doc):
        verdict = "CRASH"
    elif not all(ok for ok, _ in outputs):
        verdict = "OUTPUT CHANGED"
    elif set(serious) - expected_codes:
        verdict = "FINDINGS"
    elif expected_codes - set(serious):
        verdict = "MISSED"
    else:
        verdict = "OK"
    return {"name": entry["name"], "rc_plain": rcs[0], "rc_doctor": rcs[1], "output_same": all(o for o, _ in outputs),
            "output_diff": next((d for o, d in outputs if not o), ""), "plain_s": t_plain, "doctor_s": t_doc,
            "ratio": t_doc / t_plain, "findings": sorted(f"{c}:{s}" for c, s in findings),
            "steps": [r.get("steps") for r in reports], "exit": [r.get("exit") for r in reports],
            "internal": sorted({i for r in reports for i in r.get("internal", [])}),
            "messages": {f"{c}:{s}": f"{f.get('where')} (step {f.get('step')}, x{f.get('count')}): {f['message']}"
                         for (c, s), f in findings.items()},
            "verdict": verdict, "expected": expected,
            "stderr_tail": {k: runs[k][0]["stderr"][-1500:] for k in runs if verdict in ("CRASH", "BROKEN")}}


def bench(entry: dict[str, Any], corpus: Path, rounds: int, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"doctor-rw-{entry['name']}-") as tmp:
        cwd = prepare(entry, corpus, Path(tmp) / "repo")
        runs: dict[str, list[dict[str, Any]]] = {"plain": [], "doctor": []}
        for i in range(rounds):
            for mode in ("plain", "doctor") if i % 2 == 0 else ("doctor", "plain"):
                runs[mode].append(run_once(entry, cwd, mode == "doctor", Path(tmp) / "report.json", timeout))
        return evaluate(entry, runs)


def line(r: dict[str, Any]) -> str:
    steps = "/".join(str(s) for s in sorted(set(r["steps"]), key=str)) or "-"
    return (f"{r['name']:<26} exit {r['rc_plain']}/{r['rc_doctor']}  output {'same' if r['output_same'] else 'CHANGED'}"
            f"  plain {r['plain_s']:6.2f}s doctor {r['doctor_s']:6.2f}s  x{r['ratio']:.2f}  steps {steps:<5}"
            f"  findings {','.join(r['findings']) or 'none'}  -> {r['verdict']}")


def summary(results: list[dict[str, Any]], entries: dict[str, dict[str, Any]]) -> list[str]:
    correct = [r for r in results if entries[r["name"]]["expected"] == "correct"]
    noisy = [r["name"] for r in correct if any(f.split(":")[1] in ("warning", "error") for f in r["findings"])]
    ratios = [r["ratio"] for r in results if r["verdict"] not in ("BROKEN", "CRASH")]
    verdicts = collections.Counter(r["verdict"] for r in results)
    blind = [r["name"] for r in results if r["verdict"] != "BROKEN" and r["steps"] and not any(r["steps"])]
    return [f"{len(results)} scripts: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())),
            "0 optimizer steps counted (not watched: manual updates, spawned workers): "
            + (", ".join(blind) or "none"),
            f"warning/error findings on the {len(correct)} correct scripts: "
            + (f"{len(noisy)} ({', '.join(noisy)})" if noisy else "none"),
            f"overhead (doctor/plain wall time, median over scripts): x{statistics.median(ratios):.3f}"
            f" (range x{min(ratios):.2f}-x{max(ratios):.2f}; wall times include start-up; indicative only"
            " on a busy shared machine)" if ratios else "overhead: no comparable runs"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--corpus", type=Path, help="folder of OWNER+NAME/COMMIT/PATH files")
    ap.add_argument("--collect", type=Path, metavar="MIRRORS", help="fill the corpus from git mirrors and exit")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved plain/doctor runs per script (default 3)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these scripts")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--json", type=Path, help="write every result (findings' messages included) here")
    ap.add_argument("--summarize", type=Path, nargs="+", metavar="JSON", help="print the lines and summary of "
                    "results saved with --json (several files are joined) and exit")
    args = ap.parse_args()
    entries = json.loads(args.manifest.read_text())["scripts"]
    if args.summarize:
        saved = [r for path in args.summarize for r in json.loads(path.read_text())]
        print("\n".join([*map(line, saved), *summary(saved, {e["name"]: e for e in entries})]))
        return 0
    if args.only:
        unknown = set(args.only) - {e["name"] for e in entries}
        if unknown:
            ap.error(f"--only: no script named {', '.join(sorted(unknown))} in {args.manifest.name}")
        entries = [e for e in entries if e["name"] in args.only]
    if args.collect:
        corpus = args.corpus or CORPORA[0]
        print(f"collected {collect(args.collect, corpus, entries)} files into {corpus}")
        return 0
    corpus, missing = find_corpus(entries, args.corpus)
    if missing:
        print(f"doctor_realworld: the third-party scripts are not here ({', '.join(missing)} missing from "
              f"{corpus or ' or '.join(map(str, CORPORA))}); fetch them and run with --collect MIRRORS. Skipped.")
        return 0
    results = []
    for entry in entries:
        results.append(bench(entry, corpus, args.rounds, args.timeout))
        print(line(results[-1]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    print("\n".join(summary(results, {e["name"]: e for e in entries})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
