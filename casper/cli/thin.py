"""The thin path: `search`, `show`, `stats`, `contacts` (while the service answers) and `chats`,
parsed without building the typer app.

A warm `casper search` asks the service, which answers in ~20 ms; importing typer, click and
every command module cost the client process more than that. So the console entry point
(`casper/__main__.py`) first offers the arguments to `run` here: when they are exactly a read
command with options from `COMMANDS`, the command's body (`casper.cli.reads`, the same one the
typer command calls) runs with the same error guard (`casper.cli.guard`). Before anything else
is loaded, the request a service-backed command will make is sent to the running service
(`send_early`): the settings, the request check and what prints the answer load while the
service works on it, and the body uses that answer once its own check of the request gives the
same request (else it asks again). Anything else —
`--help`, `-v`, an option or value this table does not know, a usage error, `--`, a service
that is not running, no index yet — returns None and the full typer app handles it, so help,
usage errors and every newer option behave exactly as before. A test keeps this table a
faithful subset of the typer commands' options (names, kinds, choices, defaults).

Imports: stdlib, casper.vocab; casper.service.client to send; casper.config, casper.errors,
casper.cli.guard and the work (casper.cli.reads) once the request is on its way (inside the
functions on purpose: loaded before the request, they would add their time to the answer's).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casper.vocab import LEXICAL, MODES

if TYPE_CHECKING:
    from casper.service.client import Sent

FLAG, TEXT, NUMBER, PATH = "flag", "text", "number", "path"
Kind = str | tuple[str, ...]  # one of the four above, or the choices a value must be one of


class Command:
    """A read command as the thin path knows it: its positional arguments (each required, in
    order), its options (`--since` → ("since", TEXT)), and whether its work goes to the
    service (then the thin path runs only while the service answers). A plain class: the
    dataclasses module (and the `inspect` it loads) is not worth its milliseconds here."""

    __slots__ = ("arguments", "options", "service")

    def __init__(
        self, arguments: tuple[str, ...], options: dict[str, tuple[str, Kind]], service: bool = True
    ) -> None:
        self.arguments, self.options, self.service = arguments, options, service


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
    # here, not at the top: a service-backed command's request is sent before these load
    from casper.config import load_config
    from casper.errors import CasperError

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


def request_args(name: str, found: dict[str, Any]) -> dict[str, object]:
    """The arguments of the request the body of `name` makes from these options, as the wire
    carries them (casper.app.requests.wire of its check): what `send_early` sends. The body
    checks them itself and asks again if its request differs."""
    if name == "search":
        return {"query": found["query"], "person": found.get("person"),
                "chat": found.get("chat"), "since": found.get("since"),
                "until": found.get("until"), "k": found.get("k"),
                "mode": found.get("mode", "hybrid"), "lexical": found.get("lexical"),
                "rerank": not found.get("no_rerank", False),
                "literal": found.get("literal", False)}  # fmt: skip
    if name == "show":
        return {"ref": found["ref"], "before": found.get("before", 5),
                "after": found.get("after", 5)}  # fmt: skip
    if name == "stats":
        return {"person": found["person"], "since": found.get("since"),
                "until": found.get("until"), "chat": None, "period": None}  # fmt: skip
    return {}


def send_early(name: str, found: dict[str, Any]) -> Sent | None:
    """The command's request, sent to the service already running for its data dir (the
    store there, its socket answering), before the settings and the rest load; None when the
    command does not go to the service or none is running."""
    if not COMMANDS[name].service or found.get("no_service"):
        return None
    if os.environ.get("CASPER_SERVICE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    given = found.get("home") or os.environ.get("CASPER_HOME")
    home = Path(given).expanduser() if given else Path.home() / ".casper"
    if not os.path.isfile(home / "casper.sqlite"):
        return None
    from casper.service import client

    return client.send(home, name, request_args(name, found))


def run(argv: Sequence[str]) -> int | None:
    """Run a read command here and return its exit code, or None: the full CLI's turn."""
    if os.environ.get("CASPER_THIN", "1") == "0":
        return None  # for comparing both paths
    parsed = parse(argv)
    if parsed is None:
        return None
    name, found = parsed
    sent = send_early(name, found)
    if not ready(name, found):
        if sent is not None:
            sent.close()
        return None
    # loaded while the service works on the request sent above
    from casper.cli import reads
    from casper.cli.guard import explained, prepare, say_error, say_unexpected
    from casper.errors import CasperError

    prepare(verbose=False)
    try:
        try:
            reads.BODIES[name](**found, **({"sent": sent} if sent is not None else {}))
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
