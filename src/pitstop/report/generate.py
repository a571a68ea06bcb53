"""The generation report from its JSON document (kind ``generate``): every variant's prefill,
per-token decode and tokens/s beside the reference measured in the same stage, the token gate's
verdicts, the other batch sizes (latency vs throughput), the winner and its recipe."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pitstop._format import fmt_bytes
from pitstop.report.bench import speedup, status
from pitstop.report.kind import Kind

Doc = dict[str, Any]


def num(value: float | None, spec: str) -> str:
    """``value`` by ``spec``, ``-`` where nothing was measured."""
    return "-" if value is None else format(value, spec)


def _tokens(row: Doc) -> str:
    fid = row.get("fidelity") or {}
    if "prompts" not in fid:
        return "-"
    same = f"{fid['identical']}/{fid['prompts']} same"
    first = [d for d in fid.get("first_divergence") or [] if d is not None]
    return same + (f", diff @{min(first)}" if first else "")


def _ms(summary: Doc | None, key: str = "median") -> str:
    return num(summary.get(key), ".2f") if summary else "-"


def variants_table(doc: Doc, stages: tuple[str, ...] | None = None) -> Table:
    """One row per variant and stage: whole-call latency, prefill, decode per token, tokens/s."""
    s = doc.get("settings") or {}
    title = (f"{doc.get('model', '')} · generate {s.get('new_tokens')} tokens after {s.get('prompt_len')} · "
             f"{s.get('threads')} threads · {s.get('device')} · speed-ups vs inference_mode in the same stage · "
             "ms/call: one whole generate; ms/token: each decode step; break-even: new tokens that pay back "
             "the first call (compile)")
    table = Table(title=Text(title, style="table.title"), title_justify="left")
    for header, justify in [("variant", "left"), ("stage", "left"), ("batch", "right"), ("status", "left"),
                            ("ms/call", "right"), ("prefill ms", "right"), ("ms/token (p90)", "right"),
                            ("tokens/s", "right"), ("speed-up [95% CI]", "right"), ("verdict", "left"),
                            ("tokens", "left"), ("1st call s", "right"), ("break-even", "right"),
                            ("weights", "right"), ("KV cache", "right"), ("peak mem", "right")]:
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    winner = (doc.get("winner") or {}).get("variant")
    for row in doc.get("results", []):
        if stages is not None and row.get("stage") not in stages:
            continue
        cell, verdict = speedup(row)
        tps = (row.get("tokens_per_s") or {}).get("total")
        decode = row.get("decode_ms_per_token")
        name = Text(row["variant"], style="bold green" if row["variant"] == winner and row["stage"] == "final" else "")
        table.add_row(name, row.get("stage", ""), str(row["batch_size"]), status(row), _ms(row.get("latency_ms")),
                      _ms(row.get("prefill_ms")), f"{_ms(decode)} ({_ms(decode, 'p90')})" if decode else "-",
                      num(tps, ".1f"), cell, verdict, _tokens(row), num(row.get("first_call_s"), ".1f"),
                      num(row.get("break_even_tokens"), ".0f"),
                      fmt_bytes((row.get("details") or {}).get("state_dict_bytes")),
                      fmt_bytes((row.get("details") or {}).get("kv_cache_bytes")),
                      fmt_bytes(row.get("peak_memory_bytes")))
    return table


def renderables(doc: Doc) -> list[RenderableType]:
    """The terminal report."""
    items: list[RenderableType] = [variants_table(doc)]
    for row in doc.get("results", []):
        if row.get("reason") or row.get("note"):
            items.append(Text(f"  {row['variant']} ({row.get('stage')}): {row.get('reason') or row.get('note')}",
                              style="dim"))
    for note in doc.get("notes") or []:
        items.append(Text(f"note: {note}"))
    load = [st["load"] for st in (doc.get("search") or {}).get("stages", []) if st.get("load")]
    if load:
        busy = any(x.get("busy") for x in load)
        items.append(Text(f"load average {load[0].get('loadavg_start', 0):.2f} -> {load[-1].get('loadavg_end', 0):.2f}"
                          f"{' (busy: other processes took the CPU)' if busy else ''}; "
                          f"CPU {(doc.get('environment') or {}).get('cpu', '?')}", style="dim"))
    win = doc.get("winner") or {}
    if not doc.get("settings", {}).get("bench_only"):
        sp = win.get("speedup")
        if win.get("variant") and win["variant"] != "inference_mode" and sp:
            tps = (win.get("tokens_per_s") or {}).get("total")
            even = win.get("break_even_tokens")
            items.append(Text(f"Fastest with the same tokens: {win['variant']}, {sp['median']:.2f}x the reference "
                              f"[{sp['ci95'][0]:.2f}-{sp['ci95'][1]:.2f}]"
                              + (f", {tps:.1f} tokens/s" if tps else "")
                              + (f"; its first call pays back after {even:.0f} new tokens" if even else ""),
                              style="bold"))
        elif doc.get("complete"):
            items.append(Text("inference_mode stays: nothing generated faster beyond noise with the same tokens",
                              style="bold"))
    if doc.get("recipe"):
        items.append(Text("Recipe (apply(model), generate(model, input_ids, max_new_tokens)):"))
        items.append(Text(doc["recipe"]))
    return items


def generate_html(doc: Doc, fragment: bool = False) -> str:
    """``--generate`` as a page: tokens/s per variant (final stage, else the probe) and every row."""
    from html import escape

    from pitstop.report.svg import Bar, bar_chart, html_table, page
    from pitstop.report.svg import environment_table as environment
    from pitstop.report.svg import fragment as as_fragment

    rows = doc.get("results", [])
    shown = [r for r in rows if r.get("stage") == "final"] or [r for r in rows if r.get("stage") == "probe"]
    bars = [Bar(r["variant"], r["tokens_per_s"]["total"]) for r in shown if r.get("tokens_per_s")]
    sections = [bar_chart("Tokens per second (whole generate calls)", bars, "tokens/s") if bars else ""]
    sections.append(html_table(
        ["variant", "stage", "batch", "status", "ms/generate", "prefill ms", "decode ms/token", "tokens/s",
         "speed-up", "verdict", "tokens vs reference"],
        [[r["variant"], r.get("stage", ""), r["batch_size"],
          r["status"] + (f": {r['reason']}" if r.get("reason") else ""),
          _ms(r.get("latency_ms")), _ms(r.get("prefill_ms")), _ms(r.get("decode_ms_per_token")),
          num((r.get("tokens_per_s") or {}).get("total"), ".1f"),
          f"{r['speedup']['median']:.2f}x" if r.get("speedup") else "-", (r.get("speedup") or {}).get("verdict", ""),
          _tokens(r)] for r in rows]))
    sections += [f"<p>{escape(str(n))}</p>" for n in doc.get("notes") or []]
    if doc.get("recipe"):
        sections.append(f"<h2>Recipe</h2><pre>{escape(doc['recipe'])}</pre>")
    if fragment:
        return as_fragment(sections)
    sections.append(environment(doc.get("environment", {})))
    return page(f"pitstop generate: {doc.get('model', '')}", sections)


KINDS = {"generate": Kind(renderables, generate_html, "GENERATE_SCHEMA")}
