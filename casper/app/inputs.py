"""Checks on what a user types into `search` and `ask`, before any store or model is opened.

Each failure is a CasperError with a hint, so the CLI prints `error:` + `hint:` and exits 1.
Imports: casper.errors. Dates are checked by casper.dates.ranges.date_range.
"""

from __future__ import annotations

from casper.errors import CasperError


def require_text(text: str, *, what: str, example: str) -> None:
    """An empty or blank query or question is an error, not a search for everything."""
    if not text.strip():
        raise CasperError(f"the {what} is empty", hint=f"say what you are looking for: {example}")


def require_positive_k(k: int | None) -> None:
    """`-k` counts hits: zero or fewer would silently print nothing."""
    if k is not None and k < 1:
        raise CasperError(f"-k must be at least 1 (got {k})", hint="e.g. -k 10 for ten hits")
