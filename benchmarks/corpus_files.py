"""Copy a manifest's third-party files out of fetched git mirrors into the git-ignored corpus folder.

The corpora (``lint_corpus.json``, ...) name each file by repository, commit and path; the files are
never committed. A repository fetched as a bare mirror (``/work/.mirror/<owner>+<name>/repo``, what
the search tool's ``fetch`` leaves) holds the commit; this script writes every listed file with
``git show COMMIT:PATH`` to ``DIR/<owner>+<name>/<path>`` and says which repositories are missing.

    python benchmarks/corpus_files.py [--manifest benchmarks/lint_corpus.json] [--mirrors DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def wanted(manifest: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(repo, commit) -> the paths to copy: the labelled files and their context files."""
    out: dict[tuple[str, str], set[str]] = {}
    for project in manifest:
        paths = out.setdefault((project["repo"], project["commit"]), set())
        paths.update(f["path"] for f in project["files"])
        paths.update(project.get("context", []))
    return out


def git_dir(mirrors: Path, repo: str) -> Path | None:
    base = mirrors / repo.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo"):
        if (candidate / "HEAD").exists():
            return candidate
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=HERE / "lint_corpus.json")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--out", type=Path, default=HERE / ".corpus" / "lint")
    args = parser.parse_args()
    copied, missing_repos, missing_files = 0, set(), []
    for (repo, commit), paths in sorted(wanted(json.loads(args.manifest.read_text())).items()):
        gd = git_dir(args.mirrors, repo)
        if gd is None:
            missing_repos.add(repo)
            continue
        for path in sorted(paths):
            target = args.out / repo.replace("/", "+") / path
            if target.exists():
                copied += 1
                continue
            proc = subprocess.run(["git", "--git-dir", str(gd), "show", f"{commit}:{path}"], capture_output=True)
            if proc.returncode:
                missing_files.append(f"{repo}@{commit[:8]}:{path}")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(proc.stdout)
            copied += 1
    print(f"corpus_files: {copied} files in {args.out}; {len(missing_repos)} repositories not fetched"
          + (f" ({', '.join(sorted(missing_repos))})" if missing_repos else "")
          + (f"; {len(missing_files)} files absent at their commit: {', '.join(missing_files)}"
             if missing_files else ""))
    return 1 if missing_repos or missing_files else 0


if __name__ == "__main__":
    sys.exit(main())
