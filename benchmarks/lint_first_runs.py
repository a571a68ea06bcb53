"""Which of lint's findings hold on code the rules had never seen? Each fresh round of issue 48's
corpus (``"added": "issue-48*"``) was labelled and committed before any rule changed for it, so the
rules *as they stood at that commit* met its projects cold. This script lints each round's
**development** projects with the source tree of the commit before that round's rule changes (a
``git archive`` of ``src/`` into a scratch folder, run in its own interpreter) and scores every
finding against today's labels, grouped by the finding's message shape (its rule's template with
names and numbers taken out): the first-run precision of each way a rule reports.

The held-out part is never linted here: its findings are never read (lint_realworld.py prints only
its figures). What this gives is evidence, from development projects alone, of which report shapes
generalise and which were fitted to the projects they were fixed on.

    python benchmarks/lint_first_runs.py [--files DIR] [--json FILE] [--verbose] [--round TAG] [--present]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lint_realworld as rw  # noqa: E402

# the round's tag -> the commit whose src/ is the rules that round first met (the label commit, or its
# parent where the same commit also changed the rules)
ROUNDS = {"issue-48": "4aa82ec", "issue-48-b": "925805b^", "issue-48-c": "d42b75d", "issue-48-d": "8dff7c0",
          "issue-48-e": "1aa852e", "issue-48-f": "afe7d82",
          "issue-48-g": "1b52f57", "issue-48-h": "24d9383",
          "issue-48-i": "c8ce5c1", "issue-48-j": "b3f99c3",
          "issue-48-k": "25bef1c", "issue-48-l": "4ed5b03",
          "issue-48-m": "ef7f5b5", "issue-48-n": "d63042d",
          "issue-48-o": "e16ac7c", "issue-48-p": "26e2662",
          "issue-48-q": "fa7f540", "issue-48-r": "009d41c",
          "issue-48-s": "c3ed905", "issue-48-t": "603aadd",
          "issue-48-u": "4c602d1", "issue-48-v": "3ea7434",
          "issue-48-w": "dfb0010", "issue-48-x": "d0a97e5",
          "issue-48-y": "5962078", "issue-48-z": "0df114d",
          "issue-48-aa": "4621d3e"}

_CHILD = r"""
import json, sys
from pathlib import Path
from pitstop.lint import lint
root, paths = Path(sys.argv[1]), json.loads(sys.argv[2])
res = lint([str(root / p) for p in paths], select=["ALL"])
print(json.dumps([[Path(d.path).resolve().relative_to(root.resolve()).as_posix(), d.line, d.code, d.message]
                  for d in res.findings]))
"""


def shape(code: str, message: str) -> str:
    """The message with what varies between findings taken out: backticked text, quotes, numbers."""
    s = re.sub(r"`[^`]*`", "`_`", message)
    s = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", s)
    s = re.sub(r"\d+", "N", s)
    return f"{code} {s[:110]}"


def rules_at(commit: str, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "src.tar"
    subprocess.run(["git", "archive", "-o", str(archive), commit, "src"], cwd=HERE.parent, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=Path, default=rw.DEFAULT_FILES)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--verbose", "-v", action="store_true", help="list each false finding with its trap note")
    parser.add_argument("--at", help="lint every round with this commit's rules (WORKTREE: this checkout's src/), "
                                     "for comparison with the first runs")
    parser.add_argument("--round", action="append", help="only this round's tag (issue-48-x); again for more")
    parser.add_argument("--present", action="store_true", help="only the projects whose files are all here")
    args = parser.parse_args(argv)
    manifest = json.loads(rw.MANIFEST.read_text(encoding="utf-8"))
    held = rw.held_out(manifest)  # drawn on the whole manifest: a project's part never depends on what is here
    if args.present:
        whole = [i for i, p in enumerate(manifest) if not rw.missing([p], args.files)]
        print(f"lint_first_runs: the {len(whole)} of {len(manifest)} projects whose files are here")
        held = {whole.index(i) for i in held if i in whole}
        manifest = [manifest[i] for i in whole]
    if rw.missing(manifest, args.files):
        print(f"lint_first_runs: corpus files absent under {args.files} (benchmarks/corpus_files.py); skipped")
        return 0
    by_shape: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    falses: list[str] = []
    per_round: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="pitstop-first-") as tmp:
        for tag, commit in ROUNDS.items():
            if args.round and tag not in args.round:
                continue
            if args.at:
                commit = args.at
            src = (HERE.parent / "src" if args.at == "WORKTREE"
                   else rules_at(commit, Path(tmp) / tag.replace("-", "_")))
            tally = {"true": 0, "optional": 0, "false": 0, "missed": 0}
            for i, project in enumerate(manifest):
                if project.get("added") != tag or i in held:
                    continue
                root = rw.stage(project, args.files / project["repo"].replace("/", "+"), Path(tmp) / "p" / str(i))
                labels = rw.load_labels(project, root)
                labelled = [f["path"] for f in project["files"]]
                paths = labelled + [c for c in project.get("context", []) if c.endswith(".py")]
                out = subprocess.run([sys.executable, "-c", _CHILD, str(root), json.dumps(paths)],
                                     capture_output=True, text=True, env={"PYTHONPATH": str(src), "PATH": "/usr/bin"})
                if out.returncode:
                    print(f"{tag} {project['name']}: lint failed: {out.stderr.strip().splitlines()[-1:]}")
                    continue
                hit: set = set()
                for rel, line, code, message in json.loads(out.stdout):
                    if code not in rw.SCORED or code == "PIT501" or rel not in labelled:
                        continue
                    matches = [lab for lab in labels if lab.path == rel and lab.code == code and line in lab.lines]
                    good = [lab for lab in matches if lab.kind in ("must", "optional")]
                    key = shape(code, message)
                    if good:
                        if any(lab in hit for lab in good):
                            continue
                        hit.update(good)
                        kind = "true" if any(lab.kind == "must" for lab in good) else "optional"
                    else:
                        kind = "false"
                        trap = next((lab.note for lab in matches if lab.kind == "trap"), "no label")
                        falses.append(f"{tag} {project['name']}:{rel}:{line} {key}\n      ({trap})")
                    by_shape[key][kind] += 1
                    tally[kind] += 1
                tally["missed"] += sum(lab.kind == "must" and lab.code != "PIT501" and lab not in hit
                                       for lab in labels)
            per_round[tag] = tally
            t = tally
            prec = (t["true"] + t["optional"]) / max(1, t["true"] + t["optional"] + t["false"])
            rec = t["true"] / max(1, t["true"] + t["missed"])
            print(f"{tag:<11} rules at {commit:<9} development projects: precision {prec:.2f}, recall {rec:.2f} "
                  f"({t['true']} true, {t['optional']} optional, {t['false']} false, {t['missed']} missed)")
    print("\nfirst-run findings by message shape (development projects of every round):")
    for key, k in sorted(by_shape.items(), key=lambda kv: -kv[1]["false"]):
        n = k["true"] + k["optional"] + k["false"]
        print(f"  {k['true']:3d} true {k['optional']:3d} opt {k['false']:3d} false  "
              f"{(n - k['false']) / n:4.2f}  {key}")
    if args.verbose:
        print(f"\nfalse findings ({len(falses)}):")
        print("\n".join(f"  {x}" for x in falses))
    if args.json:
        args.json.write_text(json.dumps({"rounds": per_round, "shapes": by_shape, "false": falses}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
