"""`python -m eval`: the same command as `casper eval`, run as that command's own process.

A process, not an import: the harness sits below the command line, so it never imports it.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    """Replace this process with `python -m casper eval ARGS`."""
    args = sys.argv[1:] if argv is None else argv
    os.execv(sys.executable, [sys.executable, "-m", "casper", "eval", *args])


if __name__ == "__main__":
    main()
