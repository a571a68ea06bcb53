"""Blind judgments for the held-out findings nobody labelled (issue 48's measurement).

A finding on a line that carries no label of its code counts as false in ``lint_realworld.py``: the
labeller never judged that line. The development part had such lines labelled after linting (marked
``"after-linting"``); the held-out part never did, so its precision counts every unjudged finding
against the linter. This script is the pooling step of information-retrieval evaluation (TREC's:
what a system returns that no assessor judged is sent to an assessor), done blind:

``packet DIR``: with the rules frozen (a commit), lint the held-out projects and write ``DIR/packet.json``:
every scored finding (PIT501 aside) on a line with no label of its code (a *pooled* item), mixed in
seeded order with as many *controls* (held-out lines already labelled with that code, must/optional
and trap alternately). An item gives only the file, the line and the code's description, never the
linter's message or whether it is a finding. ``DIR/key.json`` keeps which is which. Nothing of
either is printed, only counts: the main session never reads the held-out findings.

``merge DIR``: read ``DIR/judged.json`` (``{"<id>": {"kind": "must|optional|trap", "note": "..."}}``,
written by an assessor who reads the code only: a helper session, never the linter's output) and
print the assessor's agreement with the labels on the controls; add the pooled items' judgments
to the manifest as labels marked ``"added": "pooled-blind"``. ``lint_realworld.py`` prints the
held-out figures with and without them.

    python benchmarks/lint_pool.py packet DIR [--present]
    python benchmarks/lint_pool.py merge DIR
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lint_realworld as rw  # noqa: E402

SEED = 4801
POOLED = "pooled-blind"
GUIDE = {
    "must": "a real pitfall of this code at this line, one a user would want flagged",
    "optional": "defensible either way (a finding here is neither credited nor counted against)",
    "trap": "correct code here, or no pitfall of this code at this line",
}


def _codes() -> dict[str, str]:
    from pitstop.codes import CODES

    return {c: f"{CODES[c].name}: {CODES[c].summary}" for c in rw.SCORED}


def packet(out: Path, files: Path, path: Path = rw.MANIFEST, present: bool = False) -> int:
    manifest = json.loads(path.read_text(encoding="utf-8"))
    held = rw.held_out(manifest)
    pooled, labelled = [], []
    with tempfile.TemporaryDirectory(prefix="pitstop-pool-") as tmp:
        for i, project in enumerate(manifest):
            if i not in held or (present and rw.missing([project], files)):
                continue
            root = rw.stage(project, files / project["repo"].replace("/", "+"), Path(tmp) / str(i))
            labels = rw.load_labels(project, root)
            seen = set()
            for rel, line, code in rw.lint_project(project, root):
                if code == "PIT501" or (rel, line, code) in seen:
                    continue
                seen.add((rel, line, code))
                if not any(lab.path == rel and lab.code == code and line in lab.lines for lab in labels):
                    pooled.append({"project": i, "path": rel, "line": line, "code": code})
            labelled += [{"project": i, "path": lab.path, "line": lab.line, "code": lab.code, "label": lab.kind}
                         for lab in labels if lab.code != "PIT501"]
    rng = random.Random(SEED)
    controls = []
    for n, item in enumerate(pooled):
        same = [lab for lab in labelled if lab["code"] == item["code"] and lab not in controls]
        wanted = [lab for lab in same if (lab["label"] == "trap") == (n % 2 == 1)] or same
        if wanted:
            controls.append(rng.choice(wanted))
    items = [{**x, "role": "pooled"} for x in pooled] + [{**x, "role": "control"} for x in controls]
    rng.shuffle(items)
    codes = _codes()
    out.mkdir(parents=True, exist_ok=True)
    public, key = [], {}
    for n, item in enumerate(items):
        project = manifest[item["project"]]
        folder = files / project["repo"].replace("/", "+")
        public.append({"id": str(n), "project_folder": str(folder), "file": item["path"], "line": item["line"],
                       "code": item["code"], "code_means": codes[item["code"]],
                       "project_files": [f["path"] for f in project["files"]] + list(project.get("context", []))})
        key[str(n)] = item
    (out / "packet.json").write_text(json.dumps({"kinds": GUIDE, "items": public}, indent=1), encoding="utf-8")
    (out / "key.json").write_text(json.dumps(key, indent=1), encoding="utf-8")
    print(f"lint_pool: {len(pooled)} pooled items and {len(controls)} controls written to {out}/packet.json "
          f"(by code: {dict(Counter(x['code'] for x in pooled))})")
    return 0


def merge(out: Path, path: Path = rw.MANIFEST) -> int:
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))
    judged = json.loads((out / "judged.json").read_text(encoding="utf-8"))
    absent = sorted(set(key) - set(judged), key=int)
    if absent:
        print(f"lint_pool: {len(absent)} items have no judgment in {out}/judged.json; judge them first")
        return 2
    bad = [k for k, v in judged.items() if v.get("kind") not in GUIDE]
    if bad:
        print(f"lint_pool: {len(bad)} judgments have a kind other than must/optional/trap; fix them first")
        return 2
    agree, controls, counts = 0, 0, Counter()
    for k, item in key.items():
        kind = judged[k]["kind"]
        if item["role"] == "control":
            controls += 1
            # must and optional both count as "flag-worthy": the scorer credits either
            agree += (kind == "trap") == (item["label"] == "trap")
        else:
            counts[kind] += 1
    manifest = json.loads(path.read_text(encoding="utf-8"))
    added = 0
    for k, item in key.items():
        if item["role"] != "pooled":
            continue
        entry = next(f for f in manifest[item["project"]]["files"] if f["path"] == item["path"])
        if any(lab.get("added") == POOLED and lab["line"] == item["line"] and lab["code"] == item["code"]
               for lab in entry["labels"]):
            continue
        entry["labels"].append({"line": item["line"], "code": item["code"], "kind": judged[k]["kind"],
                                "note": f"pooled judgment: {judged[k].get('note', '')}".strip(), "added": POOLED})
        added += 1
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"lint_pool: controls: the assessor agreed with the labels on {agree} of {controls} "
          f"({agree / max(1, controls):.2f}; trap against must/optional)")
    print(f"lint_pool: pooled items judged {dict(counts)}; {added} labels added to {path.name}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("packet", "merge"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--files", type=Path, default=rw.DEFAULT_FILES)
    parser.add_argument("--manifest", type=Path, default=rw.MANIFEST)
    parser.add_argument("--present", action="store_true", help="packet: pool only the held-out projects whose "
                        "files are all here (a session that could fetch only part of the repositories)")
    args = parser.parse_args(argv)
    if args.command == "packet":
        if not args.present and rw.missing(json.loads(args.manifest.read_text(encoding="utf-8")), args.files):
            print(f"lint_pool: corpus files absent under {args.files} (benchmarks/corpus_files.py, or pass "
                  "--present); skipped")
            return 0
        return packet(args.dir, args.files, args.manifest, args.present)
    return merge(args.dir, args.manifest)


if __name__ == "__main__":
    raise SystemExit(main())
