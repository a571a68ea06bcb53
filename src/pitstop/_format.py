"""Number formatting shared by every report (terminal and HTML) and by the values' own summaries."""

from __future__ import annotations


def fmt_bytes(n: int | None) -> str:
    """Human-readable bytes (binary units)."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def fmt_ms(x: float) -> str:
    """Milliseconds with three significant figures."""
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def num(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``; ``nan`` for a number a JSON document holds as null (NaN and
    infinity are null there)."""
    return "nan" if value is None else format(value, spec)
