"""What the doctor found: most severe first, merged across ranks; its JSON document (``pitstop.report``
renders it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop._document import Rendered, envelope
from pitstop.codes import SEVERITIES, at_least
from pitstop.doctor.findings import Finding


@dataclass
class DoctorReport(Rendered):
    """Findings (most severe first), the steps watched, how the script ended, and what the doctor
    measured on the way (data-wait share, steps skipped by guard, internal warnings)."""

    findings: list[Finding]
    steps: int
    exit: dict[str, Any] = field(default_factory=lambda: {"status": "ok"})
    skipped_steps: list[int] = field(default_factory=list)
    data_share: float | None = None
    internal: list[str] = field(default_factory=list)
    ranks: int = 1
    script: str | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, Any] = field(default_factory=dict)  # loss, grad_norm, layers (top by size)
    # what was watched: optimizers, optimizer_steps (all together), manual_steps, not_watched (lines)
    watched: dict[str, Any] = field(default_factory=dict)

    # -- queries ----------------------------------------------------------------------------

    def at_least(self, severity: str) -> list[Finding]:
        """Findings of ``severity`` or worse."""
        return [f for f in self.findings if at_least(f.severity, severity)]

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def __iter__(self) -> Any:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    # -- output -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The ``kind: doctor`` JSON document (docs/json.md)."""
        return envelope("doctor", self.environment,
                        script=self.script, steps=self.steps, exit=self.exit,
                        findings=[f.to_dict() for f in self.findings],
                        guard={"skipped_steps": self.skipped_steps}, data_wait_share=self.data_share,
                        ranks=self.ranks, internal=self.internal, timeline=self.timeline, watched=self.watched)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DoctorReport:
        return cls([Finding.from_dict(f) for f in d["findings"]], d["steps"], d.get("exit", {"status": "ok"}),
                   list(d.get("guard", {}).get("skipped_steps", [])), d.get("data_wait_share"),
                   list(d.get("internal", [])), d.get("ranks", 1), d.get("script"), d.get("environment", {}),
                   d.get("timeline", {}), d.get("watched", {}))

def timeline_summary(raw: dict[str, Any], top: int = 8) -> dict[str, Any]:
    """The loss and total-norm series, and the ``top`` layers by largest gradient norm."""
    layers = raw.get("layers", {})
    biggest = sorted(layers, key=lambda k: -max((v for _, v in layers[k] if v is not None), default=0.0))[:top]
    return {"loss": [list(p) for p in raw.get("loss", [])], "grad_norm": [list(p) for p in raw.get("grad_norm", [])],
            "layers": {k: [list(p) for p in layers[k]] for k in biggest}}


def ordered(findings: list[Finding]) -> list[Finding]:
    """Most severe first, then by first step and code."""
    return sorted(findings, key=_order)


def _order(f: Finding) -> tuple[int, int, str]:
    return SEVERITIES.index(f.severity), f.step or 0, f.code


# -- ranks -----------------------------------------------------------------------------------


def merge_dir() -> Path:
    """Where the ranks of one torchrun job leave their findings (``PITSTOP_DOCTOR_DIR`` overrides)."""
    from pitstop.ranks import merge_dir as folder

    return folder("doctor")


def merge_ranks(report: DoctorReport, rank: int, timeout_s: float = 60.0) -> DoctorReport:
    """Under a multi-process job (``WORLD_SIZE`` > 1) rank 0 gets every rank's findings and merges
    them: one finding per (code, where), naming the ranks that saw it (``pitstop.ranks.gather``: over
    the job's own process group while it exists, else through files in ``merge_dir``). Each rank
    sends its report without its loss and gradient-norm series, whose size grows with the steps:
    about 1 KB plus 0.5 KB per finding."""
    from pitstop.ranks import gather, world

    size = world()
    if size <= 1:
        return report
    summary = {**report.to_dict(), "timeline": {}}  # rank 0 keeps its own series; the others' are not merged
    docs = gather(summary, "doctor", timeout_s)
    if rank != 0 or docs is None:
        return report
    return _merge(report, docs, size, timeout_s)


def _merge(report: DoctorReport, docs: list[dict[str, Any] | None], world: int, timeout_s: float) -> DoctorReport:
    merged: dict[tuple[str, str], Finding] = {}
    per_rank = []
    for r, doc in enumerate(docs):
        if doc is None:
            report.internal.append(f"rank {r} left no findings within {timeout_s:g} s (crashed or still running?)")
            continue
        other = DoctorReport.from_dict(doc)
        per_rank.append(other)
        for f in other.findings:
            key = (f.code, f.where)
            if key not in merged:
                merged[key] = Finding(f.code, f.where, f.message, f.step, f.count, f.fix, [r])
            else:
                m = merged[key]
                m.ranks.append(r)
                m.count = max(m.count, f.count)
                m.step = min(x for x in (m.step, f.step) if x is not None) if (m.step or f.step) else None
    report.findings = sorted(merged.values(), key=_order)
    report.ranks = world
    report.steps = max((o.steps for o in per_rank), default=report.steps)
    report.skipped_steps = sorted({s for o in per_rank for s in o.skipped_steps})
    report.internal = [*report.internal, *(n for o in per_rank[1:] for n in o.internal)]
    crashed = [o.exit for o in per_rank if o.exit.get("status") != "ok"]
    if crashed:
        report.exit = crashed[0]
    return report
