"""Human-readable quantities for terminal output."""

from __future__ import annotations


def format_bytes(count: int) -> str:
    """``1536`` -> ``"1.5 KiB"``; bytes as a whole number, larger units with one decimal."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover - the loop returns at GiB
