"""What the doctor found: grouped by severity, merged across ranks, as text, a rich table or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop import _render
from pitstop._document import envelope
from pitstop.codes import CODES, SEVERITIES, at_least
from pitstop.doctor.findings import Finding


@dataclass
class DoctorReport:
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
        """The ``kind: doctor`` JSON document of PRODUCT.md."""
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

    def _repr_html_(self) -> str:
        return _render.html(self)

    def summary(self) -> str:
        counts = {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}
        found = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no findings"
        extra = []
        if self.data_share is not None:
            extra.append(f"{self.data_share:.0%} of step time waiting for data")
        if self.skipped_steps:
            extra.append(f"guard skipped {len(self.skipped_steps)} step(s)")
        if self.ranks > 1:
            extra.append(f"{self.ranks} ranks")
        tail = f" ({'; '.join(extra)})" if extra else ""
        return f"pitstop doctor: {found} in {self._steps_seen()}{tail}"

    def _steps_seen(self) -> str:
        """What the step count means: one optimizer's steps, several optimizers', or updates by hand."""
        optimizers, total = self.watched.get("optimizers", 1), self.watched.get("optimizer_steps", self.steps)
        manual = self.watched.get("manual_steps", 0)
        if optimizers > 1:
            return f"{total} optimizer steps of {optimizers} optimizers (at most {self.steps} each)"
        if manual and not total:
            return (f"{manual} step(s) of parameters updated by hand after backward (no optimizer: PIT101, PIT105 "
                    f"and PIT107 watch optimizer steps and did not run)")
        return f"{self.steps} optimizer step(s)"

    def notes(self) -> list[str]:
        """How the script ended, what was not watched, and internal warnings: one line each."""
        lines = [exit_line(self.exit, self.steps)] if self.exit.get("status") not in ("ok", None) else []
        lines += [f"not watched: {line}" for line in self.watched.get("not_watched", [])]
        return lines + [f"internal warning (training went on): {note}" for note in self.internal]

    def __str__(self) -> str:
        lines = []
        for severity in SEVERITIES:
            group = [f for f in self.findings if f.severity == severity]
            if not group:
                continue
            lines.append(f"{severity.upper()}S" if len(group) > 1 else severity.upper())
            for f in group:
                ranks = f" [ranks {','.join(map(str, f.ranks))}]" if f.ranks else ""
                seen = f"step {f.step}" + (f", {f.count} steps" if f.count > 1 else "")
                lines.append(f"  {f.code} {f.name} at {f.where} ({seen}){ranks}")
                lines.append(f"      {f.message}")
                lines.append(f"      fix: {f.fix or CODES[f.code].fix}")
        lines += self.notes()
        lines.append(self.summary())
        return "\n".join(lines)

    def table(self) -> Any:
        """A rich renderable: one row per finding, most severe first."""
        from rich.table import Table
        from rich.text import Text

        colour = {"error": "red", "warning": "yellow", "info": "cyan"}
        table = Table(title=self.summary(), title_justify="left", show_lines=True)
        for col in ("code", "severity", "where", "first step", "steps", "what happened", "fix"):
            table.add_column(col, overflow="fold")
        for f in self.findings:
            where = f.where + (f" (ranks {','.join(map(str, f.ranks))})" if f.ranks else "")
            step = str(f.step) if f.step is not None else "-"
            table.add_row(f"{f.code}\n{f.name}", Text(f.severity, style=colour[f.severity]), where, step,
                          str(f.count), f.message, f.fix or CODES[f.code].fix)
        return table


def exit_line(exit_: dict[str, Any], steps: int) -> str:
    """How the script ended, in one line (for any status but ok)."""
    status, where = exit_.get("status"), f" at {exit_['where']}" if exit_.get("where") else ""
    if status == "interrupted":
        return (f"the script was interrupted by {exit_.get('error') or 'KeyboardInterrupt'}{where} after {steps} "
                f"optimizer step(s): the findings cover the run up to there")
    if status == "exited":
        return f"the script exited with code {exit_.get('code')}"
    return f"the script {status}: {exit_.get('error', '')}{where}"


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
    the job's own process group while it exists, else through files in ``merge_dir``)."""
    from pitstop.ranks import gather, world

    size = world()
    if size <= 1:
        return report
    docs = gather(report.to_dict(), "doctor", timeout_s)
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
