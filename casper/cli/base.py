"""The typer app, shared options, the error guard that every command uses, and help that
teaches: `-h` everywhere and a worked example under every command's options.

The examples are applied once (`teach`, from casper.cli) after all commands are registered, so
command modules keep their decorators plain and a new command only needs an entry in EXAMPLES.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from casper.cli.guard import (  # noqa: F401 - the names commands import from here
    explained,
    go_offline,
    prepare,
    print_json,
    say_error,
    say_unexpected,
    stderr_console,
)
from casper.cli.guard import setup_logging as _setup_logging  # noqa: F401
from casper.cli.usage import CasperGroup
from casper.config import Config, load_config
from casper.errors import CasperError

if TYPE_CHECKING:  # rich is imported lazily, when a command prints
    from rich.console import Console

app = typer.Typer(
    name="casper",
    cls=CasperGroup,
    no_args_is_help=True,
    add_completion=False,
    help="Ask questions about your own iMessage history, privately, on your Mac.\n\n"
    "Every command takes --home PATH (the data dir) and -v (debug logs), before or after its name.",
    context_settings={"help_option_names": ["-h", "--help"]},  # commands inherit it
)

F = TypeVar("F", bound=Callable[..., Any])
Home = Annotated[
    Path | None, typer.Option("--home", help="data dir (default $CASPER_HOME or ~/.casper)")
]
Json = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
Verbose = Annotated[bool, typer.Option("-v", "--verbose", help="debug logs and tracebacks")]
NoService = Annotated[
    bool,
    typer.Option("--no-service", help="run in this process, not in the background service"),
]


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"casper {version('casper')}")
        except PackageNotFoundError:  # a source checkout that was never installed
            from casper import __version__

            typer.echo(f"casper {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Ask questions about your own iMessage history, privately, on your Mac."""


def _stderr() -> Console:
    return stderr_console()


def guarded(fn: F) -> F:
    """Turn CasperError into `error:` + `hint:` and exit 1; anything else is a bug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = bool(kwargs.get("verbose"))
        prepare(verbose)
        try:
            try:
                return fn(*args, **kwargs)
            except (CasperError, typer.Exit, typer.Abort, KeyboardInterrupt):
                raise
            except Exception as exc:
                # a damaged file or a full disk has a name and a fix; only then a bug
                named = None if verbose else explained(kwargs.get("home"), exc)
                if named is None:
                    raise
                raise named from exc
        except CasperError as exc:
            say_error(exc)
            raise typer.Exit(1) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if verbose:
                raise
            say_unexpected(exc)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def default_of(setting: str) -> str:
    """`[default: 8, setting top_k]` for the help of flags whose None means "the setting"."""
    field = next(f for f in dataclasses.fields(Config) if f.name == setting)
    return f"\\[default: {field.default}, setting {setting}]"  # \\[: not rich markup


def config(home: Path | None, **overrides: object) -> Config:
    return load_config(home, **overrides)


# ---- help that teaches ----------------------------------------------------------------------
# Typer's rich help collapses single newlines inside an epilog; blank lines keep one per line.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "index": ("casper index", "casper index --rebuild --json > index.json"),
    "contacts": ("casper contacts", "casper contacts --json | jq '.[0].id'"),
    "chats": ("casper chats", 'casper search "dinner" --chat 7'),
    "stats": (
        "casper stats Sam",
        'casper stats p_034e2395 --since "last March" --until 2024-06-30',
        'casper stats "Climbing crew" --by week --png crew.png',
        "casper stats me --since 2024-01-01",
    ),
    "export": (
        "casper export --person Sam --format md",
        "casper export --chat 7 --since 2024-01-01 --format csv -o climbing.csv",
    ),
    "search": (
        'casper search "dentist"',
        'casper search "dinner plans" --person Priya --since "2 weeks ago" -k 3',
    ),
    "ask": (
        'casper ask "when did Sam and I plan Thanksgiving?"',
        'casper ask "who do I text the most?" --json',
        'casper ask "who is bringing pie?" --base-url http://127.0.0.1:11434/v1 --model qwen3:4b',
    ),
    "chat": (
        "casper chat",
        "casper chat --no-llm",
        "casper chat --base-url http://127.0.0.1:8080/v1 --model default_model",
    ),
    "mcp": ("casper mcp", "casper mcp --home ~/.casper/demo"),
    "review": ("casper review 2023", "casper review 2023 --share -o review.html"),
    "show": ("casper show 48213", "casper show 48213 --before 10 --after 2"),
    "doctor": ("casper doctor", "casper doctor --json"),
    "eval": ("casper eval --dataset synthetic", "casper eval --dataset my_gold.jsonl -k 5 -k 10"),
    "demo": ("casper demo", 'casper demo "what did Priya say about the dentist?"'),
    "serve": ("casper serve --status", "casper serve --stop", "casper serve --idle-minutes 60 -v"),
    "pull": ("casper pull", "casper pull --model mlx-community/Qwen3-4B-Instruct-2507-4bit"),
}


def epilog(name: str) -> str | None:
    lines = EXAMPLES.get(name)
    if not lines:
        return None
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


def reflowed(doc: str) -> str:
    """A docstring as help: each paragraph one line, which the terminal wraps. Typer's rich
    help joins the first paragraph's lines but keeps the later ones' line breaks, so a
    source line end became a break in mid-sentence."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def teach(app: typer.Typer) -> None:
    """Add the examples as epilogs (unless a command set its own); every paragraph of the help
    is one line (`reflowed`)."""
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else "")
        if not info.epilog:
            info.epilog = epilog(name.replace("_", "-"))
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = reflowed(info.callback.__doc__)
