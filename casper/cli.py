"""`casper` command line: the typer app. Commands live in `casper.commands.*`; what they build
comes from the composition root, `casper.runtime`.

Heavy libraries (lancedb, torch, mlx) are imported inside commands so `casper --help` is fast.
"""

from __future__ import annotations

from casper.commands import ask, browse, data, evaluate, models, retrieval, serve  # noqa: F401
from casper.commands.base import app
from casper.commands.help_text import teach

teach(app)

__all__ = ["app"]
