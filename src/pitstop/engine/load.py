"""How busy the machine was while a stage ran: the load average, the CPU time other processes took
(all CPU time from /proc/stat minus pitstop's and its workers') and the time a hypervisor stole. A
busy machine must not choose for the user: a thread count measured while others took the CPU
says more about them than about the model (on 2 cores with one busy, one thread looks 5x faster).

Linux only (/proc); elsewhere the monitor records the load average alone and never says busy."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

BUSY_SHARE = 0.15  # other processes used more than 15% of the machine's CPU time
STEAL_SHARE = 0.10  # or the hypervisor took more than 10%
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class LoadMonitor:
    """``start()`` ... ``stop()`` -> ``{"loadavg_start", "loadavg_end", "others_cpu_share",
    "steal_share", "wall_s", "busy"}`` (shares of all cores' time over the interval)."""

    def start(self) -> LoadMonitor:
        self.t0, self.load0 = time.monotonic(), _loadavg()
        self.stat0, self.ours0 = _cpu_stat(), _our_cpu_s()
        return self

    def stop(self) -> dict[str, Any]:
        wall, stat, ours = time.monotonic() - self.t0, _cpu_stat(), _our_cpu_s()
        out: dict[str, Any] = {"loadavg_start": self.load0, "loadavg_end": _loadavg(), "wall_s": wall,
                               "others_cpu_share": None, "steal_share": None, "busy": False}
        if stat is None or self.stat0 is None or wall <= 0:
            return out
        busy_s = (stat["busy"] - self.stat0["busy"]) / _TICK
        total = max(stat["total"] - self.stat0["total"], 1)
        cores = os.cpu_count() or 1
        out["others_cpu_share"] = max(0.0, busy_s - (ours - self.ours0)) / (wall * cores)
        out["steal_share"] = (stat["steal"] - self.stat0["steal"]) / total
        out["busy"] = out["others_cpu_share"] > BUSY_SHARE or out["steal_share"] > STEAL_SHARE
        return out


def merge(loads: list[dict[str, Any]]) -> dict[str, Any]:
    """One record for a whole search: the first and last load averages, the largest shares."""
    if not loads:
        return {}
    others = [x["others_cpu_share"] for x in loads if x.get("others_cpu_share") is not None]
    steal = [x["steal_share"] for x in loads if x.get("steal_share") is not None]
    return {"loadavg_start": loads[0]["loadavg_start"], "loadavg_end": loads[-1]["loadavg_end"],
            "others_cpu_share": max(others) if others else None, "steal_share": max(steal) if steal else None,
            "busy": any(x.get("busy") for x in loads)}


def _loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _cpu_stat() -> dict[str, int] | None:
    """All CPUs' busy, steal and total ticks from /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    except (OSError, ValueError, IndexError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return {"busy": user + nice + system + irq + softirq, "steal": steal,
            "total": user + nice + system + idle + iowait + irq + softirq + steal}


_ORPHANED = [0.0]  # CPU seconds of our processes a kill left to init to reap (see ``killed_group``)


def _our_cpu_s() -> float:
    """CPU seconds of this process and every live descendant (their finished children included),
    and of the descendants a kill orphaned."""
    import resource

    mine = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = mine.ru_utime + mine.ru_stime + waited.ru_utime + waited.ru_stime + _ORPHANED[0]
    return total + sum(_proc_cpu_s(pid) for pid in _descendants(os.getpid()))


def killed_group(leader: int) -> None:
    """Count now the CPU of the processes in ``leader``'s process group other than the leader (a
    worker's DataLoader workers), which SIGKILL to the group is about to orphan: init reaps them, so
    their time would leave our tree and count as other processes' (a busy machine, wrongly). Call
    it just before the kill; the leader itself is reaped by its parent, in our tree."""
    for pid in _descendants(leader):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(leader):  # the group's, not a process that left it
            _ORPHANED[0] += _proc_cpu_s(pid)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in Path("/proc").iterdir() if e.name.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _proc_cpu_s(pid: int) -> float:
    """utime + stime (+ its waited children's) of a live process, in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICK
    except (OSError, ValueError, IndexError):
        return 0.0


DRIFT = 0.25  # a comparison moving by more than 25% within a stage, beyond its noise


def _thirds(groups: list[list[float]]) -> tuple[list[float], list[float]]:
    first = [t for run in groups for t in run[: len(run) // 3]]
    last = [t for run in groups for t in run[len(run) - len(run) // 3:]]
    return first, last


def _turn_medians(groups: list[list[float]], turns: list[list[int]]) -> list[list[float]]:
    """Per replica, the median of each turn's samples (``turns``: each turn's sample count, in order)."""
    out = []
    for samples, counts in zip(groups, turns, strict=False):
        medians, start = [], 0
        for n in counts:
            if n > 0 and start + n <= len(samples):
                medians.append(float(np.median(samples[start:start + n])))
            start += n
        out.append(medians)
    return out


def drift(base: list[list[float]], row: list[list[float]], name: str, what: str = "step time",
          turns: tuple[list[list[int]], list[list[int]]] | None = None) -> str | None:
    """Whether a comparison drifted during a stage: ``row``'s time over the reference's (``base``,
    per replica, in measurement order) in the first third of the stage against the last third;
    moved when the two ratios' 95% ranges (from the medians' intervals) are apart and differ by
    more than ``DRIFT``. The variants are measured in interleaved rounds, so a load that slows
    every variant alike moves no ratio: only one that moved the comparison itself counts.

    With ``turns`` (each replica's sample count per turn, for ``base`` and ``row``) the unit is the
    round, not the sample: a turn's samples are consecutive and share its moment's load, so their
    spread says nothing of the spread between turns. Each round gives one ratio (the two turns'
    medians, taken side by side), and the first third of the rounds is compared with the last;
    fewer than 3 rounds in a third cannot say. The reason, or None."""
    from pitstop.stats import median_ci

    if turns is not None:
        a, b = _turn_medians(base, turns[0]), _turn_medians(row, turns[1])
        rounds = [[x / y for x, y in zip(ra, rb, strict=False) if y > 0] for ra, rb in zip(a, b, strict=False)]
        r1, r2 = _thirds(rounds)
        if min(len(r1), len(r2)) < 3:
            return None
        (lo1, hi1), (lo2, hi2) = median_ci(r1), median_ci(r2)
        first, last = float(np.median(r1)), float(np.median(r2))
        apart = hi1 < lo2 or hi2 < lo1
    else:
        (b1, b2), (s1, s2) = _thirds(base), _thirds(row)
        if min(map(len, (b1, b2, s1, s2))) < 3:
            return None
        (blo1, bhi1), (blo2, bhi2) = median_ci(b1), median_ci(b2)
        (rlo1, rhi1), (rlo2, rhi2) = median_ci(s1), median_ci(s2)
        first, last = float(np.median(b1) / np.median(s1)), float(np.median(b2) / np.median(s2))  # speed-ups
        apart = bhi1 / rlo1 < blo2 / rhi2 or bhi2 / rlo2 < blo1 / rhi1
    if apart and abs(last / first - 1) > DRIFT:
        return (f"{name}'s speed-up by {what} moved from {first:.2f}x to {last:.2f}x while it was measured")
    return None


def stage_drift(naive: Any, rows: list[Any], cpu: bool) -> str | None:
    """The first measured row (a ``Measurement``) whose comparison with ``naive`` drifted, on the
    clock the stage compares by: CPU time per step (``cpu``: a busy machine) or wall time."""
    for row in (r for r in rows if r.status == "ok" and r is not naive):
        a, b = ((x.details or {}).get("cpu_samples_s") for x in (naive, row)) if cpu else (None, None)
        ta, tb = ((x.details or {}).get("turns") for x in (naive, row))
        turns = (ta, tb) if ta and tb else None
        moved = drift(a, b, row.variant, "CPU time per step", turns) if a and b and any(a) and any(b) \
            else drift(naive.replica_samples_s, row.replica_samples_s, row.variant, turns=turns)
        if moved:
            return moved
    return None
