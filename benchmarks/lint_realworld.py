"""How well does `pitstop lint` do on code nobody here wrote? Precision and recall per code on the
hand-labelled real-world corpus of issue 19 (``benchmarks/lint_corpus.json``).

The manifest lists projects (a public repository at a commit, the files that form its training or
inference loop, and its requirement files); every file is labelled by reading the code, never by
running the linter: ``must`` (a real pitfall a user wants flagged), ``optional`` (defensible either
way: a finding there is neither credited nor counted against), ``trap`` (correct code that looks like
a pitfall). Each project is copied to a scratch folder and linted in one run, so cross-file analysis
sees the whole project and nothing of this repository (its own pyproject.toml included).

A finding matches a label of the same code when its line falls in the labelled statement (for a
compound statement, its header: decorators, ``with``/``for``/``def`` line), on one of the label's
``also`` lines, or, for PIT109/PIT201 (an evaluation function's pitfall), on the header of the
function that holds the label or one of its ``also`` lines (since round twenty: the labeller's other
place for the forward, ``decode()`` calling ``model.translate()``, reported at ``decode``'s header).
Precision = findings on must/optional labels / all findings of the scored codes; recall = must
labels found / must labels. A finding on a trap or on no label is a false positive.

A project marked ``"added": "after-tuning"`` joined the corpus after the rules had been tuned on the
older projects; the script also prints the figures of those projects alone (labelled before the
linter ran on them, so their first run was a held-out test). A label marked ``"added": "after-linting"``
was added to an older file after a finding showed the labels had missed a pattern labelled elsewhere.

Issue 48's held-out part: a seeded split (``SPLIT_SEED``: a project is held out when its hash falls
below ``HELD_OUT_SHARE``) drawn before any rule was changed for it. The script prints both parts' figures;
``--verbose`` lists the development part's misses and false findings only, never the held-out
part's, which is the headline.

The files are third-party code and are not committed: they live in the git-ignored
``benchmarks/.corpus/lint/<owner>+<name>/<path>``. Without them the script says so and exits 0.

    python benchmarks/lint_realworld.py [--files DIR] [--json FILE] [--verbose] [--present]
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "lint_corpus.json"
DEFAULT_FILES = HERE / ".corpus" / "lint"
SHARED_COPY = Path("/work/corpus/lint/files")
SCORED = ("PIT101", "PIT102", "PIT103", "PIT104", "PIT109", "PIT201", "PIT202",
          "PIT301", "PIT401", "PIT501", "PIT601", "PIT602")


@dataclass(frozen=True)
class Label:
    """One hand label: a code at a statement, of kind must / optional / trap."""

    project: str
    path: str
    line: int
    code: str
    kind: str
    note: str
    lines: frozenset[int]  # the lines a finding may sit on to match this label


@dataclass
class Tally:
    """Per-code counts: true positives, false positives, false negatives, optional hits."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    optional: int = 0
    fps: list[str] = field(default_factory=list)
    fns: list[str] = field(default_factory=list)

    def precision(self) -> float | None:
        found = self.tp + self.optional + self.fp
        return (self.tp + self.optional) / found if found else None

    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


FUNCTION_LEVEL = ("PIT109", "PIT201")  # an evaluation function's pitfall may be reported at its def line


def parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def header(node: ast.stmt) -> frozenset[int]:
    """Lines of a statement, only its header (decorators to the line before its body) if compound."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    body = getattr(node, "body", None)
    end = body[0].lineno - 1 if isinstance(body, list) and body and body[0].lineno > node.lineno \
        else (node.end_lineno or node.lineno)
    return frozenset(range(start, max(start, end) + 1))


def enclosing_def(tree: ast.Module | None, line: int) -> frozenset[int]:
    """Header lines of the innermost function whose body holds ``line`` (empty at module level)."""
    best: ast.stmt | None = None
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and node.body[0].lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno > best.lineno:
                best = node
    return header(best) if best else frozenset()


def statement_lines(tree: ast.Module | None) -> dict[int, frozenset[int]]:
    """For each line, the lines of the innermost statement (header only, for compound ones) on it."""
    if tree is None:
        return {}
    spans: dict[int, frozenset[int]] = {}
    for node in ast.walk(tree):  # outer statements first, so inner ones overwrite them
        if not isinstance(node, ast.stmt):
            continue
        span = header(node)
        for line in span:
            if line not in spans or len(span) <= len(spans[line]):
                spans[line] = span
    return spans


POOLED = "pooled-blind"  # held-out labels from lint_pool.py's blind judgments of unlabelled findings


def load_labels(project: dict, root: Path, pooled: bool = True) -> list[Label]:
    labels = []
    for entry in project["files"]:
        tree = parse((root / entry["path"]).read_text(encoding="utf-8", errors="replace"))
        spans = statement_lines(tree)
        for lab in entry["labels"]:
            if not pooled and lab.get("added") == POOLED:
                continue
            lines = set(spans.get(lab["line"], {lab["line"]})) | set(lab.get("also", []))
            if lab["code"] in FUNCTION_LEVEL:  # the header of the function holding it, or holding an also line
                for at in [lab["line"], *lab.get("also", [])]:
                    lines |= enclosing_def(tree, at)
            labels.append(Label(project["name"], entry["path"], lab["line"], lab["code"], lab["kind"],
                                lab["note"], frozenset(lines)))
    return labels


def stage(project: dict, src: Path, scratch: Path) -> Path:
    """Copy one project's files and requirement files to ``scratch``; return the project's root."""
    root = scratch / project["repo"].replace("/", "+")
    for rel in [f["path"] for f in project["files"]] + list(project.get("context", [])):
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, dest)
    return root


def lint_project(project: dict, root: Path) -> list[tuple[str, int, str]]:
    """(relative path, line, code) of every scored finding, the project's files linted in one run."""
    from pitstop.lint import lint

    labelled = [f["path"] for f in project["files"]]
    context = [rel for rel in project.get("context", []) if rel.endswith(".py")]  # the project around them
    result = lint([str(root / rel) for rel in labelled + context], select=["ALL"])
    found = []
    for d in result.findings:
        rel = Path(d.path).resolve().relative_to(root.resolve()).as_posix()
        if d.code in SCORED and rel in labelled:
            found.append((rel, d.line, d.code))
    return found


def score(labels: list[Label], findings: list[tuple[str, int, str]], tallies: dict[str, Tally]) -> None:
    by_key: dict[tuple[str, str], list[Label]] = defaultdict(list)
    for lab in labels:
        by_key[(lab.path, lab.code)].append(lab)
    hit: set[Label] = set()
    for path, line, code in findings:
        where = f"{labels[0].project if labels else '?'}:{path}:{line} {code}"
        matches = [lab for lab in by_key.get((path, code), []) if line in lab.lines]
        good = [lab for lab in matches if lab.kind in ("must", "optional")]
        if good:
            if not any(lab in hit for lab in good):  # a second finding on the same label is a duplicate
                kind = "must" if any(lab.kind == "must" for lab in good) else "optional"
                if kind == "must":
                    tallies[code].tp += 1
                else:
                    tallies[code].optional += 1
            hit.update(good)
        else:
            tallies[code].fp += 1
            trap = next((lab for lab in matches if lab.kind == "trap"), None)
            tallies[code].fps.append(where + (f"  (trap: {trap.note})" if trap else ""))
    for lab in labels:
        if lab.kind == "must" and lab not in hit:
            tallies[lab.code].fn += 1
            tallies[lab.code].fns.append(f"{lab.project}:{lab.path}:{lab.line} {lab.code}  ({lab.note})")


def combine(tallies: dict[str, Tally], codes: list[str]) -> Tally:
    total = Tally()
    for code in codes:
        t = tallies[code]
        total.tp, total.fp, total.fn, total.optional = (total.tp + t.tp, total.fp + t.fp,
                                                        total.fn + t.fn, total.optional + t.optional)
    return total


def fmt(x: float | None) -> str:
    return "   -" if x is None else f"{x:4.2f}"


def table(tallies: dict[str, Tally], counts: dict[str, dict[str, int]]) -> str:
    rows = [f"{'code':<14} {'prec':>5} {'recall':>6} {'TP':>4} {'FP':>4} {'FN':>4} {'opt':>4}"
            f" {'must':>5} {'trap':>5}"]
    for code in SCORED:
        t = tallies[code]
        rows.append(f"{code:<14} {fmt(t.precision()):>5} {fmt(t.recall()):>6} {t.tp:4d} {t.fp:4d} {t.fn:4d}"
                    f" {t.optional:4d} {counts[code]['must']:5d} {counts[code]['trap']:5d}")
    for name, codes in (("overall", list(SCORED)), ("without PIT501", [c for c in SCORED if c != "PIT501"])):
        t = combine(tallies, codes)
        rows.append(f"{name:<14} {fmt(t.precision()):>5} {fmt(t.recall()):>6} {t.tp:4d} {t.fp:4d} {t.fn:4d}"
                    f" {t.optional:4d} {sum(counts[c]['must'] for c in codes):5d}"
                    f" {sum(counts[c]['trap'] for c in codes):5d}")
    return "\n".join(rows)


FRESH = {  # "added" tag -> what it is: labelled before the rules were changed for them
    "issue-48": "added for issue 48 (labelled before its rules changed, never tuned on)",
    "issue-48-b": "added in issue 48's second round (labelled before that round's rules changed, never tuned on)",
    "issue-48-c": "added in issue 48's third round (labelled before that round's rules changed, never tuned on)",
    "issue-48-d": "added in issue 48's fourth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-e": "added in issue 48's fifth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-f": "added in issue 48's sixth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-g": "added in issue 48's eighth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-h": "added in issue 48's ninth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-i": "added in issue 48's tenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-j": "added in issue 48's eleventh round (labelled before that round's rules changed, never tuned on)",
    "issue-48-k": "added in issue 48's twelfth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-l": "added in issue 48's thirteenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-m": "added in issue 48's fourteenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-n": "added in issue 48's fifteenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-o": "added in issue 48's sixteenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-p": "added in issue 48's seventeenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-q": "added in issue 48's eighteenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-r": "added in issue 48's nineteenth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-s": "added in issue 48's twentieth round (labelled before that round's rules changed, never tuned on)",
    "issue-48-t": "added in issue 48's twenty-first round (labelled before that round's rules changed, never tuned on)",
    "issue-48-u": "added in issue 48's twenty-second round "
                  "(labelled before that round's rules changed, never tuned on)",
    "issue-48-v": "added in issue 48's twenty-third round "
                  "(labelled before that round's rules changed, never tuned on)",
    "issue-48-w": "added in issue 48's twenty-fourth round "
                  "(labelled before that round's rules changed, never tuned on)",
    "issue-48-x": "added in issue 48's twenty-fifth round "
                  "(labelled before that round's rules changed, never tuned on)",
    "issue-48-y": "added in issue 48's twenty-sixth round "
                  "(labelled before that round's rules changed, never tuned on)",
    "issue-48-z": "added in issue 48's twenty-seventh round "
                  "(labelled before that round's rules changed, never tuned on)",
    "issue-48-aa": "added in issue 48's twenty-eighth round "
                   "(labelled before that round's rules changed, never tuned on)",
}
SPLIT_SEED = 48  # issue 48: chosen before any rule was changed for it; never re-drawn
HELD_OUT_SHARE = 0.4  # a project is held out when its hash falls below this: stable as the corpus grows


def held_out(manifest: list[dict]) -> set[int]:
    """The held-out part: each project by sha256(seed, repo, name) alone (so a project added later
    never moves another between the parts). Its false positives and negatives are never printed
    (only its figures), so that no rule is tuned on it."""
    import hashlib

    def share(p: dict) -> float:
        return int(hashlib.sha256(f"{SPLIT_SEED}:{p['repo']}:{p['name']}".encode()).hexdigest()[:8], 16) / 2 ** 32

    return {i for i, p in enumerate(manifest) if share(p) < HELD_OUT_SHARE}


def missing(manifest: list[dict], files: Path) -> int:
    return sum(not (files / p["repo"].replace("/", "+") / f["path"]).is_file()
               for p in manifest for f in p["files"])


def report_json(tallies: dict[str, Tally], meta: dict) -> dict:
    def row(t: Tally) -> dict:
        return {"precision": t.precision(), "recall": t.recall(), "tp": t.tp, "fp": t.fp, "fn": t.fn,
                "optional": t.optional}
    codes = {code: {**row(t), "false_positives": t.fps, "false_negatives": t.fns} for code, t in tallies.items()}
    return {**meta, "codes": codes, "overall": row(combine(tallies, list(SCORED))),
            "without_PIT501": row(combine(tallies, [c for c in SCORED if c != "PIT501"]))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=Path, default=DEFAULT_FILES, help="corpus folder (<owner>+<name>/<path>)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="labels (default: lint_corpus.json here)")
    parser.add_argument("--json", type=Path, help="also write the figures, FPs and FNs as JSON to FILE")
    parser.add_argument("--verbose", "-v", action="store_true", help="list every false positive and negative")
    parser.add_argument("--present", action="store_true", help="score only the projects whose files are all here "
                        "(a session that could fetch only part of the repositories); says how many are left out")
    args = parser.parse_args(argv)
    manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
    if args.files == DEFAULT_FILES and not DEFAULT_FILES.is_dir() and (HERE / "files").is_dir():
        args.files = HERE / "files"  # the shared copy's layout: the script next to files/
    if args.present:
        whole = [p for p in manifest if not missing([p], args.files)]
        if len(whole) < len(manifest):
            print(f"lint_realworld: scoring the {len(whole)} of {len(manifest)} projects whose files are all under "
                  f"{args.files}; the figures are of those only\n")
        manifest = whole
    absent = missing(manifest, args.files)
    if absent:
        hint = f"`cp -r {SHARED_COPY}/. {args.files}/`" if SHARED_COPY.is_dir() else \
            "check out each manifest repo at its commit into DIR/<owner>+<name>/"
        print(f"lint_realworld: {absent} corpus files absent under {args.files}; get them with {hint} "
              f"(or pass --files DIR); skipped")
        return 0
    tallies: dict[str, Tally] = {code: Tally() for code in SCORED}
    counts: dict[str, dict[str, int]] = {code: {"must": 0, "optional": 0, "trap": 0} for code in SCORED}
    late: dict[str, Tally] = {code: Tally() for code in SCORED}  # projects added after the rules were tuned
    late_counts: dict[str, dict[str, int]] = {code: {"must": 0, "optional": 0, "trap": 0} for code in SCORED}
    held = held_out(manifest)
    part: dict[bool, dict[str, Tally]] = {h: {code: Tally() for code in SCORED} for h in (False, True)}
    part_counts = {h: {code: {"must": 0, "optional": 0, "trap": 0} for code in SCORED} for h in (False, True)}
    # the held-out part as first labelled: lint_pool.py's blind judgments of unlabelled findings left out
    first = {code: Tally() for code in SCORED}
    first_counts = {code: {"must": 0, "optional": 0, "trap": 0} for code in SCORED}
    n_pooled = 0
    # the projects labelled for issue 48 (two rounds, each before the rules changed after it), held-out part
    fresh = {tag: {code: Tally() for code in SCORED} for tag in FRESH}
    fresh_counts = {tag: {code: {"must": 0, "optional": 0, "trap": 0} for code in SCORED} for tag in FRESH}
    start, n_files, n_late = time.perf_counter(), 0, 0
    with tempfile.TemporaryDirectory(prefix="pitstop-corpus-") as tmp:
        for i, project in enumerate(manifest):
            root = stage(project, args.files / project["repo"].replace("/", "+"), Path(tmp) / str(i))
            labels = load_labels(project, root)
            findings = lint_project(project, root)
            for lab in labels:
                counts[lab.code][lab.kind] += 1
            score(labels, findings, tallies)
            for lab in labels:
                part_counts[i in held][lab.code][lab.kind] += 1
            score(labels, findings, part[i in held])
            if i in held:
                bare = load_labels(project, root, pooled=False)
                n_pooled += len(labels) - len(bare)
                for lab in bare:
                    first_counts[lab.code][lab.kind] += 1
                score(bare, findings, first)
            tag = project.get("added")
            if tag in FRESH and i in held:  # labelled before the rules changed after them, never tuned on
                for lab in labels:
                    fresh_counts[tag][lab.code][lab.kind] += 1
                score(labels, findings, fresh[tag])
            if project.get("added") == "after-tuning":
                n_late += 1
                for lab in labels:
                    late_counts[lab.code][lab.kind] += 1
                score(labels, findings, late)
            n_files += len(project["files"])
    elapsed = time.perf_counter() - start
    print(f"pitstop lint on the real-world corpus: {len(manifest)} projects, {n_files} files, "
          f"{sum(c['must'] for c in counts.values())} must / {sum(c['optional'] for c in counts.values())} "
          f"optional / {sum(c['trap'] for c in counts.values())} trap labels ({elapsed:.1f}s)\n")
    print(table(tallies, counts))
    if n_late:
        print(f"\nof which added after the rules were tuned on the older corpus ({n_late} projects; "
              f"{sum(c['must'] for c in late_counts.values())} must labels):\n")
        print(table(late, late_counts))
    for h, title in ((False, "development part"), (True, "held-out part (seeded split, issue 48: the headline)")):
        n = sum(len(manifest[i]["files"]) for i in range(len(manifest)) if (i in held) == h)
        print(f"\n{title}: {sum((i in held) == h for i in range(len(manifest)))} projects, {n} files\n")
        print(table(part[h], part_counts[h]))
    if n_pooled:
        print(f"\nheld-out part as first labelled (the {n_pooled} blind pooled judgments of lint_pool.py left "
              f"out: every finding on a line nobody judged counts as false)\n")
        print(table(first, first_counts))
    for tag, title in FRESH.items():
        new_held = [i for i, p in enumerate(manifest) if p.get("added") == tag and i in held]
        if new_held:
            print(f"\nheld-out projects {title}: {len(new_held)} projects, "
                  f"{sum(len(manifest[i]['files']) for i in new_held)} files\n")
            print(table(fresh[tag], fresh_counts[tag]))
    if args.verbose:  # the development part's only: the held-out part's are never read while rules change
        for title, attr in (("false negatives", "fns"), ("false positives", "fps")):
            items = [x for code in SCORED for x in getattr(part[False][code], attr)]
            print(f"\n{title} ({len(items)}):")
            print("\n".join(f"  {x}" for x in items) or "  none")
    if args.json:
        meta = {"projects": len(manifest), "files": n_files, "labels": counts}
        report = report_json(tallies, meta)
        if n_late:
            report["added_after_tuning"] = report_json(late, {"projects": n_late, "labels": late_counts})
        for h, key in ((False, "development"), (True, "held_out")):
            report[key] = report_json(part[h], {"projects": sum((i in held) == h for i in range(len(manifest))),
                                                "labels": part_counts[h]})
            if h:  # the held-out parts' findings are never written: only their figures
                for row in report[key]["codes"].values():
                    row.pop("false_positives"), row.pop("false_negatives")
                for tag in FRESH:
                    n_tag = sum(1 for i, p in enumerate(manifest) if p.get("added") == tag and i in held)
                    fresh_key = "held_out_" + tag.replace("-", "_")
                    report[fresh_key] = report_json(fresh[tag], {"projects": n_tag, "labels": fresh_counts[tag]})
                    for row in report[fresh_key]["codes"].values():
                        row.pop("false_positives"), row.pop("false_negatives")
                if n_pooled:
                    report["held_out_as_first_labelled"] = report_json(first, {"labels": first_counts,
                                                                               "pooled_labels_left_out": n_pooled})
                    for row in report["held_out_as_first_labelled"]["codes"].values():
                        row.pop("false_positives"), row.pop("false_negatives")
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
