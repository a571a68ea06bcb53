"""The input pipeline part of `benchmarks/train_scripts.py` (issue 44): hand-set DataLoaders and the
whole-process targets.

An entry of `scripts_corpus.json` with `"input_bound": true` names its training DataLoader call
(`loader`: the file and the call's exact text). Beside the original and pitstop's patch, the
benchmark then runs three hand-set copies, the call given `num_workers=N, persistent_workers=True`
for N = 1, 2, 4 (what a user who read the DataLoader docs would try), each as a whole process.

The targets are judged on whole processes (interpreter start to exit: imports, worker start-up,
compilation and every step), never on a per-step ratio:

- the patch is within 5% of the best hand-set DataLoader (best hand wall / patched wall >= 0.95);
- at least 1.3x faster than the original where the original waits for data for more than half of
  its step (the share `pitstop train` measured in the original's process: `script.input_wait`);
- never slower than 0.97x, on every script of the manifest that ran (compute-bound ones too).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORKERS = (1, 2, 4)


def hand_loader(entry: dict[str, Any], root: Path, workers: int) -> None:
    """Give the entry's DataLoader call ``num_workers=workers, persistent_workers=True`` in the copy
    under ``root`` (a keyword the call already has is replaced)."""
    spec = entry["loader"]
    target = root / spec["file"]
    text = target.read_text()
    call = spec.get("call") or spec["text"]  # the call, or its whole line
    if text.count(call) != 1:
        raise SystemExit(f"{entry['name']}: the loader call is expected exactly once in {spec['file']}, found "
                         f"{text.count(call)}: the file is not the recorded commit's")
    new = call
    for keyword, value in (("num_workers", str(workers)), ("persistent_workers", "True")):
        if re.search(rf"\b{keyword}\s*=", new):
            new = re.sub(rf"\b{keyword}\s*=\s*[^,)]+", f"{keyword}={value}", new)
        else:
            head, _, tail = new.rpartition(")")
            new = f"{head.rstrip()}, {keyword}={value}){tail}"
    target.write_text(text.replace(call, new))


def copies(entry: dict[str, Any], root: Path, prepare: Callable[..., Path]) -> dict[str, Path]:
    """The hand-set copies of an input-bound entry: {"workers1": cwd, ...}; none for another entry."""
    if not entry.get("input_bound"):
        return {}
    out = {}
    for n in WORKERS:
        cwd = prepare(entry, root / f"workers{n}")
        hand_loader(entry, root / f"workers{n}", n)
        out[f"workers{n}"] = cwd
    return out


def input_share(result: dict[str, Any]) -> float | None:
    """The original's input wait, as a share of its step, from the quiet search's JSON."""
    quiet = next((s for s in result["searches"] if s["tag"] == "quiet"), None)
    share = ((quiet or {}).get("input_wait") or {}).get("naive") or {}
    return share.get("share")


def targets(results: list[dict[str, Any]], line: Callable[[str, bool, str], str]) -> list[str]:
    """Issue 44's whole-process targets over the scripts run, each met / not met with its figures."""
    whole, best, bound = [], [], []
    for r in results:
        m = r["measured"]
        base, patched = m["original"].get("wall_s"), m.get("quiet", m["original"]).get("wall_s")
        if not base or not patched:
            continue
        whole.append((r["name"], base / patched))
        hands = {name: got["wall_s"] for name, got in m.items() if name.startswith("workers") and got.get("wall_s")}
        if hands:
            name = min(hands, key=hands.__getitem__)
            best.append((r["name"], hands[name] / patched, name))
        share = input_share(r)
        if share is not None and share > 0.5:
            bound.append((r["name"], base / patched, share))
    fmt = lambda pairs: ", ".join(f"{n} {x:.2f}x" for n, x, *_ in pairs)  # noqa: E731
    return ["targets (issue 44, whole processes):",
            line("within 5% of the best hand-set DataLoader (best hand wall / patched wall)",
                 bool(best) and all(x >= 0.95 for _, x, _ in best),
                 ", ".join(f"{n} {x:.2f} (best by hand: {h})" for n, x, h in best) or "no input-bound script ran"),
            line(">= 1.3x where the original waits for data for more than half of its step",
                 bool(bound) and all(x >= 1.3 for _, x, _ in bound),
                 ", ".join(f"{n} {x:.2f}x (waits {s:.0%})" for n, x, s in bound) or "no such script ran"),
            line("never slower than 0.97x as a whole process, on every script that ran",
                 bool(whole) and all(x >= 0.97 for _, x in whole), fmt(whole))]
