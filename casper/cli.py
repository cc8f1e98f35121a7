"""`casper` command line: the composition root. Commands live in `casper.commands.*`.

Heavy libraries (lancedb, torch, mlx) are imported inside commands so `casper --help` is fast.
"""

from __future__ import annotations

from casper.commands import ask, data, evaluate, models, retrieval  # noqa: F401  (registers commands)
from casper.commands.base import app

__all__ = ["app"]
