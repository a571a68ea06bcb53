"""``pitstop optimize``'s terminal report from its JSON document: the candidates table, latency vs
throughput, the reasons, claimed vs measured, the winner and the recipe."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes, fmt_ms
from pitstop.report.bench import bench_html, claims_table, fidelity, load_line, speedup, status
from pitstop.report.kind import Kind

Doc = dict[str, Any]


def latest_rows(doc: Doc, keep: Any = None) -> list[Doc]:
    """Each variant once (of the rows ``keep`` admits): its row from the last stage that measured
    it (a ``skipped`` row never hides a measured one)."""
    latest: dict[str, Doc] = {}
    for row in doc.get("results", []):
        if (keep is None or keep(row)) and (row["variant"] not in latest or row["status"] != "skipped"):
            latest[row["variant"]] = row
    return list(latest.values())


def break_even(doc: Doc, row: Doc) -> float | None:
    """Calls after which a compiled / exported variant has paid back its preparation time against
    the baseline measured in its stage; None when it is not faster."""
    base = next((r for r in doc.get("results", []) if r.get("stage") == row.get("stage")
                 and r["variant"] == doc.get("baseline") and r["batch_size"] == row["batch_size"]), None)
    if row.get("compile_s") is None or not (base and base.get("latency_ms") and row.get("latency_ms")):
        return None
    saved_s = (base["latency_ms"]["median"] - row["latency_ms"]["median"]) / 1e3
    return row["compile_s"] / saved_s if saved_s > 0 else None


def is_winner(doc: Doc, row: Doc) -> bool:
    win = doc.get("winner") or {}
    return row["variant"] == win.get("variant") and row.get("stage") == win.get("stage") \
        and row["variant"] != doc.get("baseline")


def candidates(doc: Doc) -> list[Doc]:
    """Each variant once at the search batch size: its row from the last stage that ran it."""
    batch = (doc.get("settings") or {}).get("batch_size")
    return latest_rows(doc, lambda r: r.get("stage") != "sweep" and r["batch_size"] == batch)


def candidates_table(doc: Doc) -> Table:
    """Every candidate at the search batch size, from the last stage that measured it."""
    s, base = doc.get("settings") or {}, doc.get("baseline")
    table = Table(title=Text(f"{doc.get('model', '')} · batch {s.get('batch_size')} · {s.get('threads')} threads · "
                             f"{s.get('device')} · speed-ups vs {base}, measured alongside it in the same stage",
                             style="table.title"),
                  title_justify="left")
    for header, justify in [("candidate", "left"), ("stage", "left"), ("status", "left"), ("ms/sample", "right"),
                            ("p10-p90 ms/batch", "right"), ("speed-up [95% CI]", "right"), ("verdict", "left"),
                            ("rel err", "right"), ("compile s", "right"), ("break-even calls", "right"),
                            ("peak mem", "right")]:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in candidates(doc):
        speed, verdict = ("start point", Text("")) if row["variant"] == base else speedup(row)
        per, lat = row.get("latency_per_sample_ms"), row.get("latency_ms")
        even = break_even(doc, row)
        table.add_row(Text(row["variant"], style="bold" if is_winner(doc, row) else ""), Text(row.get("stage", "")),
                      status(row), fmt_ms(per["median"]) if per else "-",
                      f"{fmt_ms(lat['p10'])}-{fmt_ms(lat['p90'])}" if lat else "-", speed, verdict, fidelity(row),
                      f"{row['compile_s']:.1f}" if row.get("compile_s") is not None else "-",
                      f"{even:,.0f}" if even is not None else "-", fmt_bytes(row.get("peak_memory_bytes")))
    return table


def sweep(doc: Doc) -> list[Doc]:
    """Rows of the start point and the winner at every batch size measured."""
    keep = {doc.get("baseline"), (doc.get("winner") or {}).get("variant")}
    found: dict[tuple[str, int], Doc] = {}
    for row in doc.get("results", []):
        if row["variant"] in keep and row.get("samples_ms") and row["status"] in ("ok", "rejected"):
            found[(row["variant"], row["batch_size"])] = row
    return sorted(found.values(), key=lambda r: (r["batch_size"], r["variant"] != doc.get("baseline")))


def sweep_table(doc: Doc) -> Table | None:
    """Latency vs throughput across batch sizes, for the start point and the winner."""
    rows = sweep(doc)
    if len({r["batch_size"] for r in rows}) < 2:
        return None
    table = Table(title=Text("latency vs throughput (each batch size measured in its own stage)",
                             style="table.title"), title_justify="left")
    for header in ("variant", "batch", "ms/batch median", "p90 ms", "ms/sample", "samples/s"):
        table.add_column(header, justify="left" if header == "variant" else "right", no_wrap=True)
    for row in rows:
        lat, per = row.get("latency_ms"), row.get("latency_per_sample_ms")
        if lat and per:
            table.add_row(Text(row["variant"]), str(row["batch_size"]), fmt_ms(lat["median"]), fmt_ms(lat["p90"]),
                          fmt_ms(per["median"]), f"{row.get('throughput_per_s') or 0:,.0f}")
    return table


def reasons(doc: Doc) -> list[str]:
    """Why each candidate was skipped, rejected or failed, and the notes."""
    lines = []
    for row in candidates(doc):
        if row.get("reason"):
            lines.append(f"{row['variant']}: {row['status']}: {row['reason']}")
        if row.get("note"):
            lines.append(f"{row['variant']}: {row['note']}")
        for key, value in (row.get("details") or {}).items():
            lines.append(f"{row['variant']}: {key} = {value}")
    load = (doc.get("environment") or {}).get("load")
    return lines + list(doc.get("notes") or []) + ([load_line(load)] if load else [])


def closing(doc: Doc) -> list[str]:
    """The verdict lines the run wrote (``summary``; an older document has only its ``advice``)."""
    return list(doc.get("summary") or ([doc["advice"]] if doc.get("advice") else []))


def renderables(doc: Doc) -> list[RenderableType]:
    """Everything, in reading order."""
    items: list[RenderableType] = [candidates_table(doc)]
    table = sweep_table(doc)
    if table is not None:
        items.append(table)
    items += [Text(line) for line in reasons(doc)]
    claims = claims_table(doc.get("claims") or [])
    if claims is not None:
        items.append(claims)
    items += [Text(line, style="bold") for line in closing(doc)]
    recipe = (doc.get("winner") or {}).get("recipe")
    if recipe:
        items += [Text("Recipe (recipe.py with --save):", style="bold"), Text(recipe)]
    return items


KINDS = {"optimize": Kind(renderables, bench_html, "OPTIMIZE_SCHEMA")}
