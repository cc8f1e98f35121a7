"""The thin path: `search`, `show`, `stats`, `contacts` (while the service answers) and `chats`,
parsed without building the typer app.

A warm `casper search` asks the service, which answers in ~20 ms; importing typer, click and
every command module cost the client process more than that. So the console entry point
(`casper/__main__.py`) first offers the arguments to `run` here: when they are exactly a read
command with options from `COMMANDS`, the command's body (`casper.cli.reads`, the same one the
typer command calls) runs with the same error guard (`casper.cli.guard`). Anything else —
`--help`, `-v`, an option or value this table does not know, a usage error, `--`, a service
that is not running, no index yet — returns None and the full typer app handles it, so help,
usage errors and every newer option behave exactly as before. A test keeps this table a
faithful subset of the typer commands' options (names, kinds, choices, defaults).

Imports: stdlib, casper.config, casper.errors, casper.vocab, casper.cli.guard; the work
(casper.cli.reads) once the arguments are understood.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from casper.cli.guard import explained, prepare, say_error, say_unexpected
from casper.config import load_config
from casper.errors import CasperError
from casper.vocab import LEXICAL, MODES

FLAG, TEXT, NUMBER, PATH = "flag", "text", "number", "path"
Kind = str | tuple[str, ...]  # one of the four above, or the choices a value must be one of


@dataclass(frozen=True)
class Command:
    """A read command as the thin path knows it: its positional arguments (each required, in
    order), its options (`--since` → ("since", TEXT)), and whether its work goes to the
    service (then the thin path runs only while the service answers)."""

    arguments: tuple[str, ...]
    options: dict[str, tuple[str, Kind]]
    service: bool = True


_SHARED = {"--home": ("home", PATH), "--json": ("json", FLAG)}
_SERVED = {**_SHARED, "--no-service": ("no_service", FLAG)}
_DAYS = {"--since": ("since", TEXT), "--until": ("until", TEXT)}

COMMANDS: dict[str, Command] = {
    "search": Command(
        ("query",),
        {
            **_SERVED,
            **_DAYS,
            "--person": ("person", TEXT),
            "--chat": ("chat", TEXT),
            "-k": ("k", NUMBER),
            "--mode": ("mode", MODES),
            "--lexical": ("lexical", LEXICAL),
            "--no-rerank": ("no_rerank", FLAG),
            "--literal": ("literal", FLAG),
        },
    ),  # fmt: skip
    "show": Command(
        ("ref",), {**_SERVED, "--before": ("before", NUMBER), "--after": ("after", NUMBER)}
    ),
    "stats": Command(("person",), {**_SERVED, **_DAYS}),
    "contacts": Command((), dict(_SERVED)),
    "chats": Command((), dict(_SHARED), service=False),
}


def parse(argv: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """(command, its keyword arguments) when `argv` is fully understood, else None."""
    args = list(argv)
    found: dict[str, Any] = {}
    # `--home X` before the command name, as typer's group accepts it (casper.cli.usage)
    while args and args[0].startswith("--home"):
        taken = _option(args, {"--home": ("home", PATH)}, found)
        if taken is None:
            return None
        args = args[taken:]
    if not args or args[0] not in COMMANDS:
        return None
    name, args = args[0], args[1:]
    command = COMMANDS[name]
    positional: list[str] = []
    while args:
        if args[0].startswith("-") and args[0] != "-":
            taken = _option(args, command.options, found)
            if taken is None:
                return None
            args = args[taken:]
        else:
            positional.append(args.pop(0))
    if len(positional) != len(command.arguments):
        return None
    found.update(zip(command.arguments, positional, strict=True))
    return name, found


def _option(
    args: list[str], options: dict[str, tuple[str, Kind]], found: dict[str, Any]
) -> int | None:
    """Read the option at args[0] into `found`; how many words it took, or None."""
    flag, eq, attached = args[0].partition("=")
    if flag not in options:
        return None  # --help, -v, a typo, a newer option: typer's to judge
    key, kind = options[flag]
    if kind == FLAG:
        if eq:
            return None
        found[key] = True
        return 1
    if eq and not flag.startswith("--"):
        return None  # `-k=5` means "=5" to click: its error to print
    if eq:
        raw, taken = attached, 1
    elif len(args) > 1:
        raw, taken = args[1], 2
    else:
        return None  # a missing value: typer's usage error
    value = _value(raw, kind)
    if value is None:
        return None
    found[key] = value
    return taken


def _value(raw: str, kind: Kind) -> str | int | Path | None:
    """`raw` as typer would hand it over, or None where typer might refuse or read it
    otherwise (a value that looks like an option, a number that is not one, an unknown
    choice, an empty path)."""
    if raw.startswith("-") and raw != "-":
        return None
    if isinstance(kind, tuple):
        return raw if raw in kind else None
    if kind == NUMBER:
        try:
            return int(raw)  # what click's INT does with the word
        except ValueError:
            return None
    if kind == PATH:  # typer refuses a path that exists and cannot be read
        return Path(raw) if raw and (not os.path.exists(raw) or os.access(raw, os.R_OK)) else None
    return raw


def ready(name: str, found: dict[str, Any]) -> bool:
    """Whether the thin path may run the command here: a service-backed command only while
    the service answers and the store exists (starting one, running in this process and
    'nothing indexed yet' stay with the full CLI); `chats` once the store exists."""
    try:
        cfg = load_config(found.get("home"))
    except CasperError:
        return False  # the full CLI says what is wrong with config.toml
    if not cfg.store_path.exists():
        return False
    if not COMMANDS[name].service:
        return True
    from casper.cli.transport import service_enabled

    if not service_enabled(bool(found.get("no_service"))):
        return False
    from casper.service import protocol

    return protocol.socket_path(cfg.data_dir).exists()


def run(argv: Sequence[str]) -> int | None:
    """Run a read command here and return its exit code, or None: the full CLI's turn."""
    if os.environ.get("CASPER_THIN", "1") == "0":
        return None  # for comparing both paths
    parsed = parse(argv)
    if parsed is None or not ready(*parsed):
        return None
    name, found = parsed
    from casper.cli import reads

    prepare(verbose=False)
    try:
        try:
            reads.BODIES[name](**found)
        except (CasperError, KeyboardInterrupt):
            raise
        except Exception as exc:
            # a damaged file or a full disk has a name and a fix; only then a bug
            named = explained(found.get("home"), exc)
            if named is None:
                raise
            raise named from exc
    except CasperError as exc:
        say_error(exc)
        return 1
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)  # as click says it
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence, as base.guarded
        say_unexpected(exc)
        return 1
    return 0
