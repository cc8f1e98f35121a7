"""The command line: one module per command (or family: `ask` holds ask and chat), named for it,
with the typer app and shared options in `base`, terminal rendering, the live `ask` view, the
`casper chat` REPL and its history.

May import: everything in casper (the work through casper.app and casper.service), eval (only
inside `casper eval`). Heavy libraries (lancedb, torch, mlx) only inside commands, so
`casper --help` stays fast.

The typer app (`casper.cli.app`) is built on first use, not when the package is imported: the
thin path of the read commands (`casper.cli.thin`) imports modules of this package without
paying for typer and every command module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer


def _build() -> typer.Typer:
    # Importing a command module registers its commands; `casper --help` lists them in this order.
    # isort: off
    from casper.cli import ask, chats, indexing, contacts, stats, show, doctor, demo  # noqa: F401
    from casper.cli import evaluate, mcp, pull, search, serve  # noqa: F401
    from casper.cli import export, review  # noqa: F401

    # isort: on
    from casper.cli.base import app, teach

    if not getattr(app, "_casper_taught", False):
        teach(app)
        app._casper_taught = True  # type: ignore[attr-defined]
    return app


def __getattr__(name: str) -> Any:
    """`from casper.cli import app`: the whole typer app, every command registered."""
    if name == "app":
        return _build()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app"]
