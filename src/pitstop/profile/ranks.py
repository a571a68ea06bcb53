"""A profile of a torchrun job: every rank measures its own steps; rank 0 gathers a small summary
per rank (phase medians, the step, the time waiting in the gradient all-reduce: a few hundred
bytes, never a trace) over the job's process group (``pitstop.ranks``) and finds the straggler: in a
data-parallel job every rank's step takes as long as the slowest rank's work, and the others wait
for it in the all-reduce, so the straggler is the rank that works longest and waits least, and the
phase where its work differs is the cause. ``comm-bound``: the all-reduce itself is exposed.
``page-faults`` on a rank other than 0 (rank 0's own verdict already tests its own faults): that
rank's minor page faults take an estimated 5% of its step or more."""

from __future__ import annotations

import statistics
from typing import Any

from pitstop.profile.verdict import faults_entry

STRAGGLER = 0.10  # a rank working more than 10% of the step longer than the others (and >= 2 ms)
COMM = 0.20  # exposed all-reduce over 20% of the step on every rank
WORK = ("data", "forward", "backward", "optimizer")


def summary(doc: dict[str, Any], comm_wait_ms: float | None, ddp: dict[str, Any] | None,
            comm: dict[str, Any] | None = None) -> dict[str, Any]:
    """One rank's summary: its step, each phase's median, the all-reduce wait (inside backward),
    the all-reduce's own time and the share of it the backward overlapped (when timed), its minor
    page faults per step (``faults.py``)."""
    phases = {p["name"]: p["median_ms"] for p in doc.get("phases", [])}
    return {"step_ms": (doc.get("step_ms") or {}).get("median"), "phases": phases, "comm_wait_ms": comm_wait_ms,
            "comm_ms": (comm or {}).get("ms"), "comm_overlapped": (comm or {}).get("overlapped"),
            "steps": doc.get("steps", 0), "evaluation": doc.get("evaluation"), "ddp": ddp,
            "page_faults": doc.get("page_faults")}


def analyze(docs: list[dict[str, Any] | None], command: str = "pitstop train train.py",
            ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The job's ``distributed`` section and its verdict entries (each naming its rank; ``command``:
    the runnable ``pitstop train SCRIPT ARGS`` the actions name)."""
    ranks: list[dict[str, Any]] = [{"rank": r, **d} if d else {"rank": r, "missing": True}
                                   for r, d in enumerate(docs)]
    ok = [r for r in ranks if not r.get("missing") and r.get("step_ms")]
    section: dict[str, Any] = {"world": len(docs), "ranks": ranks}
    if len(ok) < 2:
        return section, []
    steps = [r["step_ms"] for r in ok]
    section["skew"] = max(steps) / min(steps) if min(steps) > 0 else None
    work = {r["rank"]: _work(r) for r in ok}
    step = statistics.median(steps)
    found = []
    slow = max(ok, key=lambda r: work[r["rank"]])
    others = [work[r["rank"]] for r in ok if r is not slow]
    excess = work[slow["rank"]] - statistics.median(others)
    if excess > max(STRAGGLER * step, 2.0):
        found.append(_straggler(slow, [r for r in ok if r is not slow], excess, step))
        section["straggler"] = {"rank": slow["rank"], "phase": found[0]["phase"], "excess_ms": excess}
    waits = [r.get("comm_wait_ms") or 0.0 for r in ok]
    if not found and min(waits) > COMM * step:
        found.append(_comm_bound(ok, statistics.median(waits), step))
    for r in (r for r in ok if r["rank"] != 0):  # rank 0's own verdict tests its own faults
        entry = faults_entry(r.get("page_faults"), command)
        if entry:
            found.append({**entry, "rank": r["rank"], "evidence": f"rank {r['rank']}: {entry['evidence']}"})
    return section, found


def _work(r: dict[str, Any]) -> float:
    """A rank's own work per step: its phases, without the all-reduce wait inside its backward."""
    phases = r["phases"]
    return sum(phases.get(p) or 0.0 for p in WORK) - (r.get("comm_wait_ms") or 0.0)


def _straggler(slow: dict[str, Any], others: list[dict[str, Any]], excess: float, step: float) -> dict[str, Any]:
    def value(r: dict[str, Any], phase: str) -> float:
        v = r["phases"].get(phase) or 0.0
        return v - (r.get("comm_wait_ms") or 0.0) if phase == "backward" else v

    diff = {p: value(slow, p) - statistics.median(value(o, p) for o in others) for p in WORK}
    phase = max(diff, key=diff.__getitem__)
    waited = statistics.median(o.get("comm_wait_ms") or 0.0 for o in others)
    rank = slow["rank"]
    cause = "waits for data" if phase == "data" else "computes slower"
    action = {"data": f"more DataLoader workers (or a faster input path) on rank {rank}'s node; pitstop data "
                      "measures num_workers on its Dataset",
              "optimizer": f"the optimizer step on rank {rank} is slower: a for-loop optimizer, or a busy host"}.get(
        phase, f"rank {rank}'s {phase} is slower than the others' on the same work: check its device or cores "
               "(another job on them, CPU affinity, thermal throttling) and its share of the data")
    return {"cause": "straggler", "rank": rank, "phase": phase, "share": excess / step if step else 0.0,
            "saves": excess / step if step else 0.0,
            "evidence": f"rank {rank} {cause}: {diff[phase]:.3g} ms more {phase} per step than the other ranks "
                        f"(median), who wait {waited:.3g} ms per step in the gradient all-reduce",
            "action": action}


def _comm_bound(ok: list[dict[str, Any]], wait: float, step: float) -> dict[str, Any]:
    ddp = next((r["ddp"] for r in ok if r.get("ddp")), None) or {}
    knobs = []
    if not ddp.get("gradient_as_bucket_view"):
        knobs.append("gradient_as_bucket_view=True")
    if not ddp.get("static_graph"):
        knobs.append("static_graph=True (a graph that does not change)")
    knobs.append(f"a larger bucket_cap_mb (now {ddp.get('bucket_cap_mb', 25)})")
    timed = [r for r in ok if r.get("comm_ms")]
    how = ""
    if timed:
        total = statistics.median(r["comm_ms"] for r in timed)
        hidden = statistics.median(r.get("comm_overlapped") or 0.0 for r in timed)
        how = f"; the all-reduce takes {total:.3g} ms per step, {hidden:.0%} of it overlapped with the backward"
    return {"cause": "comm-bound", "share": wait / step, "saves": 0.5 * wait / step,
            "evidence": f"every rank waits {wait:.3g} ms per step ({wait / step:.0%}) for the gradient all-reduce "
                        f"after its backward: communication the backward does not hide{how}",
            "action": f"DDP({', '.join(knobs)}); accumulate gradients under model.no_sync() to all-reduce less "
                      "often; pitstop train --nproc-per-node N SCRIPT ARGS measures the DDP knobs"}
