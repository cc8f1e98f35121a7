"""Usage errors (missing argument, unknown option, bad value) as `error:` + `hint:`, exit 1.

Typer's default is a boxed message with exit 2; every other Casper error is one `error:` line,
one `hint:` line and exit 1, so scripts and users meet a single shape. The group class below is
handed to `typer.Typer(cls=...)`: it catches click's UsageError where it is raised (parsing the
top-level options, resolving the command, parsing the command's own arguments).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

# inside: rich loads only when a usage error is printed

try:  # recent typer vendors click as typer._click
    from typer._click import exceptions as _click_errors
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - older typer on top of the click package
    from click import exceptions as _click_errors  # type: ignore[no-redef]
    from click import get_current_context  # type: ignore[no-redef]

if TYPE_CHECKING:
    from typer._click import Context

UsageError = _click_errors.UsageError
# click ≥ 8.2 raises this for a bare `casper`; older click prints the help itself (nothing to catch)
NoArgsIsHelpError: type[UsageError] | tuple[()] = getattr(_click_errors, "NoArgsIsHelpError", ())


def usage_hint(exc: UsageError) -> str:
    """The command's usage line and where its help is: what a reader needs to retry."""
    ctx = exc.ctx
    if ctx is None:
        return "run `casper --help` to see the commands"
    usage = ctx.get_usage().strip()
    usage = usage.split(":", 1)[1].strip() if usage.lower().startswith("usage:") else usage
    return f"usage: {usage} (more in `{ctx.command_path} --help`)"


def usage_message(exc: UsageError) -> str:
    """Click's message as one lower-case line without the trailing full stop."""
    text = " ".join(exc.format_message().split()).rstrip(".")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Print a UsageError as `error:` + `hint:` on stderr and exit 1; bare `casper` shows help."""
    try:
        yield
    except NoArgsIsHelpError as exc:
        typer.echo(exc.format_message())
        raise typer.Exit(0) from None
    except UsageError as exc:
        from casper.cli.guard import say_lines

        say_lines(usage_message(exc), usage_hint(exc))
        raise typer.Exit(1) from None


ARGV_KEY = "casper.argv"  # the context's meta: the arguments as typed


def typed_args() -> list[str]:
    """The arguments this command was started with, as typed (before `hoist_globals`)."""
    ctx = get_current_context(silent=True)
    return list(ctx.meta.get(ARGV_KEY, ())) if ctx is not None else []


# Options every command takes, accepted before the command name too (`casper --home X show 1`).
GLOBAL_VALUED = ("--home",)
GLOBAL_FLAGS = ("-v", "--verbose")


def hoist_globals(args: list[str]) -> list[str]:
    """Move the global options written before the command name to just after it, where the
    command's own parser reads them: `--home X show 1` → `show --home X 1`. Anything else
    before the command (`--version`, `-h`, a typo) stays where it was, for click to judge."""
    before: list[str] = []
    moved: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        arg = args[i]
        if arg in GLOBAL_FLAGS or arg.split("=", 1)[0] in GLOBAL_VALUED and "=" in arg:
            moved.append(arg)
        elif arg in GLOBAL_VALUED and i + 1 < len(args):
            moved += [arg, args[i + 1]]
            i += 1
        else:
            before.append(arg)
        i += 1
    if not moved:
        return args
    if i >= len(args) or args[i] == "--":  # `casper --home X` alone: the help, as bare `casper`
        return [*before, *args[i:]]
    return [*before, args[i], *moved, *args[i + 1 :]]


class CasperGroup(TyperGroup):
    """Typer's group with usage errors in Casper's own error shape, and the global options
    (`--home`, `-v`) accepted before the command as well as after it."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        ctx.meta[ARGV_KEY] = tuple(args)  # as typed, for hints that repeat the command
        return super().parse_args(ctx, hoist_globals(list(args)))

    def make_context(self, *args: Any, **kwargs: Any) -> Context:
        with usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Context) -> object:
        with usage_errors():
            return super().invoke(ctx)
