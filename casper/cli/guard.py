"""What every command shares and typer does not need: the error lines (`error:` + `hint:`), the
streams they go to, the logging set-up, the offline switch and `--json` on stdout.

Kept apart from `base` (the typer app) so the thin path of the read commands (`thin`) uses the
very same code without importing typer; `base.guarded` is built from these.

Imports: stdlib, casper.config, casper.errors; rich lazily (when something is printed).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from casper.config import load_config
from casper.errors import CasperError

# DEL, C1 and the bidirectional embeddings, overrides and isolates (a terminal shows what
# follows in another order)
_C1 = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

if TYPE_CHECKING:  # rich is imported lazily, when a command prints
    from rich.console import Console

# inside: rich, the damage explainer and telemetry load only when a command needs them


def stderr_console() -> Console:
    """The console errors, hints and notices go to (casper.cli.render.console on stderr)."""
    from casper.cli.render import console

    return console(stderr=True)


def prepare(verbose: bool) -> None:
    """Before a command runs: its logging, and no network."""
    setup_logging(verbose)
    go_offline()


def say_error(exc: CasperError) -> None:
    """A CasperError as Casper says it: `error: …` and, when it has one, `hint: …`."""
    say_lines(exc.message, exc.hint)


def say_lines(message: str, hint: str | None = None) -> None:
    """`error: message` and `hint: hint` on stderr, both as typed: never read as markup."""
    from rich.text import Text

    err = stderr_console()
    err.print(Text("error:", "red") + Text(f" {message}"), soft_wrap=True)
    if hint:
        err.print(Text("hint:", "yellow") + Text(f" {hint}"), soft_wrap=True)


def say_unexpected(exc: BaseException) -> None:
    """A bug, in two lines instead of a traceback (which -v shows)."""
    say_lines(f"unexpected {type(exc).__name__}: {exc}", "run again with -v to see the traceback")


def explained(home: Path | None, exc: Exception) -> CasperError | None:
    """The damaged file or full disk behind `exc` (casper.app.damage), else None."""
    try:
        cfg = load_config(home)
    except CasperError:
        return None  # an unreadable config.toml: the command's own error already said so
    from casper.app.damage import explain

    return explain(cfg, exc)


def go_offline() -> None:
    """No network while Casper reads or answers: models load from the local cache only.

    Set before any Hugging Face import (their constants read the environment at import time);
    `casper pull` is the one command that downloads, explicitly. Every library's telemetry is
    switched off here too, and its caches moved into Casper's (casper.telemetry).
    """
    from casper.telemetry import switch_off

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    switch_off()


def setup_logging(verbose: bool) -> None:
    level = logging.DEBUG if verbose else logging.WARNING
    if verbose:
        from rich.logging import RichHandler

        handler: logging.Handler = RichHandler(console=stderr_console(), show_path=False)
        # the handler shows the level itself; without a formatter of its own basicConfig
        # gives it "LEVEL:name:message", and every line read "DEBUG DEBUG:…"
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(NoticeFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)


class NoticeFormatter(logging.Formatter):
    """A warning from a library (a missing AddressBook) in Casper's own shape: `notice: …`,
    then `hint: …` when the record carries one; errors as `error: …`."""

    def format(self, record: logging.LogRecord) -> str:
        label = "error" if record.levelno >= logging.ERROR else "notice"
        from casper.plaintext import plain  # when a warning is printed: off the start-up paths

        text = f"{label}: {plain(record.getMessage())}"
        hint = getattr(record, "hint", None)
        return f"{text}\nhint: {hint}" if hint else text


def print_json(data: object) -> None:
    """One JSON document on stdout and nothing else there (same bytes as casper.app.documents)."""
    import json

    text = json.dumps(data, ensure_ascii=False, indent=2)
    # JSON escapes C0 itself; C1 (U+0080-U+009F: U+009B is a CSI to a terminal), DEL and the
    # bidirectional overrides it leaves as they are: written as \u escapes, the same JSON to
    # any reader
    sys.stdout.write(_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    sys.stdout.flush()
