"""PURE: the Markdown pieces every eval report is made of."""

from __future__ import annotations

from collections.abc import Sequence


def fmt(value: float | None, pct: bool = True) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}" if pct else f"{value:.1f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines
