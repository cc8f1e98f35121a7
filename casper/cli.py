"""`casper` command line: the composition root. Commands live in `casper.commands.*`.

Heavy libraries (lancedb, torch, mlx) are imported inside commands so `casper --help` is fast.
"""

from __future__ import annotations

from casper.commands import ask, browse, data, evaluate, models, retrieval  # noqa: F401  (registers)
from casper.commands.base import app
from casper.commands.help_text import teach

teach(app)

__all__ = ["app"]
