"""The command line: the typer app and its commands, terminal rendering, the live `ask` view,
the `casper chat` REPL and its history.

May import: everything in casper (the work through casper.app and casper.service), eval (only
inside `casper eval`). Heavy libraries (lancedb, torch, mlx) only inside commands, so
`casper --help` stays fast.
"""

from __future__ import annotations

from casper.cli import ask, browse, data, evaluate, indexing, mcp, models, retrieval, serve  # noqa: F401
from casper.cli.base import app
from casper.cli.help_text import teach

teach(app)

__all__ = ["app"]
