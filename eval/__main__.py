"""`python -m eval`: the same command as `casper eval`."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run `casper eval` with these arguments."""
    import casper.cli  # noqa: F401  (registers every command, so "eval" is a subcommand)
    from casper.commands import evaluate  # noqa: F401
    from casper.commands.base import app

    app(args=["eval", *(sys.argv[1:] if argv is None else argv)], prog_name="python -m eval")


if __name__ == "__main__":
    main()
