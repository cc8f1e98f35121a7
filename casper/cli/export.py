"""`casper export`: the messages of a person, a chat or everything, to keep — JSON Lines, CSV
or a Markdown transcript; 0600, never over an existing file without --force; `-o -` writes to
standard output; no messages writes nothing, says so and exits 0."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from casper.cli.base import Home, Verbose, _stderr, app, config, guarded
from casper.dates.zones import local_tz
from casper.errors import CasperError

if TYPE_CHECKING:
    from casper.app.documents import Days
    from casper.app.stats_scope import Scope

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def export(
    person: Annotated[
        str | None, typer.Option("--person", help="a person: name, handle or id")
    ] = None,
    chat: Annotated[str | None, typer.Option("--chat", help="a chat: its id or name")] = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO date or phrase")] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="ISO date or phrase (whole day)")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl, csv or md")] = "jsonl",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="the file, - for standard output (default: a name from the scope)"
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="replace an existing file")] = False,
    formula_guard: Annotated[
        bool,
        typer.Option(
            "--formula-guard/--no-formula-guard",
            help="CSV: a leading ' on a cell a spreadsheet would run as a formula",
        ),
    ] = True,
    home: Home = None,
    verbose: Verbose = False,
) -> None:
    """Export messages (a person's, a chat's, or all of them) to a file: one message a line
    in JSON Lines, a CSV table, or a Markdown transcript to read."""
    from casper.app.export import export_rows, scope_rowids
    from casper.app.export_formats import FORMATS, to_csv, to_jsonl, to_markdown
    from casper.app.outfile import destination, write_out
    from casper.app.review import full_privacy
    from casper.app.runtime import store_to_show
    from casper.app.stats_scope import Scope
    from casper.cli.stats_view import range_label
    from casper.dates.ranges import days_to_utc, span_days
    from casper.stats import zone_id

    if fmt not in FORMATS:
        raise CasperError(f"--format must be one of {', '.join(FORMATS)} (got {fmt!r})",
                          hint="e.g. --format md for a transcript to read")  # fmt: skip
    if person is not None and chat is not None:
        raise CasperError("name a person or a chat, not both",
                          hint="casper export --person Sam, or --chat 7")  # fmt: skip
    cfg = config(home)
    if not cfg.store_path.exists():
        from casper.cli.invocation import missing_index

        raise missing_index(cfg)
    tz = local_tz(cfg.timezone)
    first, last = span_days(since, until, tz, locale=cfg.locale)
    store = store_to_show(cfg)
    if person:  # a person, as every --person reads one (a chat's label says --chat ID)
        scope = Scope("person", person=store.resolve_person(person))
    elif chat:
        scope = Scope("chat", chat=store.resolve_chat(chat))
    else:
        scope = Scope("me")
    label = _label(scope)
    target = destination(out or Path(f"casper-export-{_slug(label)}.{fmt}"), force)
    rows = export_rows(store, scope_rowids(store, scope, *days_to_utc(first, last, tz)), tz,
                       full_privacy())  # fmt: skip
    days: Days = {"since": first.isoformat() if first else None,
                  "until": last.isoformat() if last else None}  # fmt: skip
    if not rows:  # a header and no rows is no export: said, nothing written, exit 0
        _stderr().print(f"no messages to export ({label}, {range_label(days)}): nothing written",
                        soft_wrap=True, markup=False)  # fmt: skip
        return
    if fmt == "jsonl":
        data = to_jsonl(rows)
    elif fmt == "csv":
        data = to_csv(rows, guard=formula_guard)
    else:
        title = "All messages" if scope.kind == "me" else f"Messages with {label}"
        subtitle = (f"{len(rows):,} messages · {range_label(days)} · times in {zone_id(tz)} · "
                    "exported by Casper")  # fmt: skip
        data = to_markdown(rows, title, subtitle)
    write_out(target, data, force=force)
    where = "standard output" if target is None else str(target)
    _stderr().print(f"wrote {len(rows):,} messages to {where}", soft_wrap=True, markup=False)


def _label(scope: Scope) -> str:
    if scope.person is not None:
        return scope.person.name
    if scope.chat is not None:
        return scope.chat.name
    return "everything"


def _slug(text: str) -> str:
    return re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-") or "messages"
