"""The comparison of two results (``kind: compare``, computed by ``pitstop.compare``) as text."""

from __future__ import annotations

from typing import Any


def compare_lines(doc: dict[str, Any]) -> list[str]:
    """The comparison as text, from its JSON document (``kind: compare``)."""
    threshold = doc.get("threshold", 0.05)
    before, after = doc.get("before"), doc.get("after")
    out = [f"pitstop compare: {before} -> {after} (time per call; > 1x = slower; regression "
           f"threshold {threshold:.0%})"]
    out += [f"warning: the environments differ: {w}" for w in doc.get("environment_differences", [])]
    out += [f"warning: compared on partial results: {p}" for p in doc.get("partial", [])]
    n = 0
    for c in doc.get("changes", []):
        regression = c["verdict"] == "regression" and c["ratio"] - 1 > threshold
        n += regression
        out.append(f"  b={c['batch_size']:<4} {c['variant']:<48} {c['before_ms']:9.3f} -> {c['after_ms']:9.3f} ms  "
                   f"{c['ratio']:.3f}x [{c['ci95'][0]:.3f}-{c['ci95'][1]:.3f}] {c['verdict']}"
                   f"{' <- REGRESSION' if regression else ''}")
    out += [f"  only in {before}: {name}" for name in doc.get("only_before", [])]
    out += [f"  only in {after}: {name}" for name in doc.get("only_after", [])]
    if doc.get("nothing_compared"):
        out.append(f"nothing compared: {doc['nothing_compared']}; no verdict")
    else:
        out.append(f"{n} regression(s) beyond {threshold:.0%}" if n else f"no regression beyond {threshold:.0%}")
    return out
