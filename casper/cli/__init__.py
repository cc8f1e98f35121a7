"""The command line: one module per command (or family: `ask` holds ask and chat), named for it,
with the typer app and shared options in `base`, terminal rendering, the live `ask` view, the
`casper chat` REPL and its history.

May import: everything in casper (the work through casper.app and casper.service), eval (only
inside `casper eval`). Heavy libraries (lancedb, torch, mlx) only inside commands, so
`casper --help` stays fast.
"""

from __future__ import annotations

# Importing a command module registers its commands; `casper --help` lists them in this order.
# isort: off
from casper.cli import ask, chats, indexing, contacts, stats, show, doctor, demo  # noqa: F401
from casper.cli import evaluate, mcp, pull, search, serve  # noqa: F401
from casper.cli import export, review  # noqa: F401

# isort: on
from casper.cli.base import app, teach

teach(app)

__all__ = ["app"]
