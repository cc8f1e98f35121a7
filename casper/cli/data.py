"""Data commands: index, contacts, stats, show, doctor, demo."""

from __future__ import annotations

import dataclasses
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, config, guarded, print_json
from casper.config import Config
from casper.dates.zones import iso, local_tz

if TYPE_CHECKING:
    from casper.indexer.lock import Holder
    from casper.indexer.run import IndexRunReport


def run_index(
    cfg: Config, *, rebuild: bool = False, quiet: bool = False, terminal_only: bool = False
) -> IndexRunReport:
    """Lock, then run `casper index` (casper.indexer.run) with this configuration's parts.
    Progress goes to stderr: none when `quiet`, and with `terminal_only` (`--json`) only when
    stderr is a terminal; the "resuming" line is said even then."""
    from casper.app import runtime
    from casper.cli.base import _stderr
    from casper.cli.progress import stage_bars
    from casper.indexer.lock import exclusive
    from casper.indexer.run import run_index as index_run
    from casper.indexer.salvage import open_store
    from casper.store.db import ensure_private_dir

    ensure_private_dir(cfg.data_dir)
    waiting = lambda other: _stderr().print(waiting_line(other), soft_wrap=True)  # noqa: E731
    say = lambda m: _stderr().print(m, soft_wrap=True)  # noqa: E731 - stderr, also with --json
    bars_on = stage_bars(not quiet, plain=not terminal_only)
    with exclusive(cfg.lock_path, on_wait=waiting), bars_on as bars:
        # with --rebuild a damaged store is moved aside and made again (casper.indexer.salvage)
        store = open_store(cfg.store_path, rebuild=rebuild, announce=say)
        try:
            return index_run(
                store, runtime.index_source(cfg), runtime.index_place(cfg),
                runtime.index_embedder(cfg), options=runtime.chunk_options(cfg),
                rebuild=rebuild, progress=bars, announce=say,
            )  # fmt: skip
        finally:
            store.close()


def waiting_line(other: Holder | None) -> str:
    """What `casper index` says while another run holds the index lock: who, since when."""
    if other is None:
        return "waiting for another index run to finish…"
    since = datetime.fromtimestamp(other.since).strftime("%H:%M:%S")
    ends = "; it ends by itself, then this run starts" if other.background else ""
    return f"waiting for {other.what} (pid {other.pid}, running since {since}) to finish{ends}…"


def _index_json(run: IndexRunReport, tz: tzinfo) -> dict[str, Any]:
    report = run.ingest
    data = report.to_dict()
    data["coverage"] = {k: iso(v, tz) for k, v in report.coverage.items()}
    fill = run.vectors
    data["vectors_done"], data["vectors_total"] = (fill.done, fill.total) if fill else (0, 0)
    return data


@app.command()
@guarded
def index(
    chat_db: Annotated[
        Path | None,
        typer.Option("--chat-db", readable=False, help="Messages database (read-only)"),
    ] = None,
    contacts: Annotated[
        Path | None,
        typer.Option("--contacts", readable=False, help="AddressBook folder or .abcddb"),
    ] = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="start over instead of incremental")
    ] = False,
    no_contacts: Annotated[
        bool,
        typer.Option("--no-contacts", help="index without AddressBook names, on purpose"),
    ] = False,
    home: Home = None,
    json: Json = False,
    verbose: Verbose = False,
) -> None:
    """Ingest new messages (incremental), update stats and the search index."""
    from casper.cli.base import _stderr
    from casper.config import remember

    cfg = config(home, chat_db=chat_db, contacts=contacts)
    if no_contacts:
        cfg = dataclasses.replace(cfg, contacts=None)
    tz = local_tz(cfg.timezone)
    # paths given once are kept in config.toml: a later plain `casper index`, or `doctor`,
    # reads the same history and AddressBook instead of the defaults. Kept as soon as chat.db
    # passes the probe, not when the run ends: a first run stopped halfway (Ctrl-C, a kill)
    # is resumed by a plain `casper index` on the same database
    given = {"chat_db": chat_db, "contacts": None if no_contacts else contacts}
    paths = {k: Path(v).expanduser().resolve() for k, v in given.items() if v is not None}
    if paths:
        from casper.indexer.pipeline import probe_source
        from casper.store.db import ensure_private_dir
        from ingest import has_address_book

        probe_source(cfg.chat_db)  # the error a run would give, before anything is kept
        if "contacts" in paths and not has_address_book(paths["contacts"]):
            del paths["contacts"]  # a typo is not kept (the run stops on it with a hint)
        ensure_private_dir(cfg.data_dir)
        remember(cfg.data_dir, **paths)
    # progress on stderr: bars on a terminal; plain lines elsewhere, except with --json
    done = run_index(cfg, rebuild=rebuild, terminal_only=json)
    report = done.ingest
    if json:
        print_json(_index_json(done, tz))
        return
    err = _stderr()
    if report.noop:
        err.print(f"up to date: {report.messages_total:,} messages ({report.elapsed_s:.2f} s)")
        return
    cov = report.coverage
    err.print(
        f"indexed {report.messages_new:,} new messages ({report.messages_total:,} total, "
        f"{report.chunks_new:,} new chunks), {report.reactions:,} reactions folded, "
        f"{report.deleted:,} deleted, {report.decode_failures:,} undecodable bodies — "
        f"coverage {(iso(cov['first'], tz) or '?')[:10]} → {(iso(cov['last'], tz) or '?')[:10]} "
        f"in {report.elapsed_s:.1f} s"
    )


@app.command()
@guarded
def contacts(
    home: Home = None, json: Json = False, no_service: NoService = False, verbose: Verbose = False
) -> None:
    """People with handles and message counts."""
    from casper.cli.transport import execute

    rows = execute("contacts", {}, config(home), no_service=no_service)
    if json:
        print_json(rows)
        return
    from casper.cli.render import console, contacts_table

    out = console()
    out.print(contacts_table(rows, out.width))


@app.command()
@guarded
def stats(
    person: Annotated[str, typer.Argument(help="name, handle or id")],
    since: Annotated[str | None, typer.Option("--since", help="ISO date or phrase")] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="ISO date or phrase (whole day)")
    ] = None,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """One person's stats (precomputed; computed for the range with --since/--until)."""
    from casper.cli.transport import execute

    args = {"person": person, "since": since, "until": until}
    data = execute("stats", args, config(home), no_service=no_service)
    if json:
        print_json(data)
        return
    _print_stats(data, _range_label(data["range"]))


def _range_label(days: dict) -> str:
    """The days a --since/--until range resolved to, so "last March" can be checked."""
    if days["since"] is None and days["until"] is None:
        return "all time"
    return f"{days['since'] or 'start'} → {days['until'] or 'today'}"


def _print_stats(data: dict, range_label: str = "all time") -> None:
    from rich.text import Text

    from casper.cli.render import console, month_bars

    c = console()
    p = data["person"]
    head = Text(p["name"], style="bold")
    head.append(f"  {p['id']} · {', '.join(p['handles'])}", style="dim")
    c.print(head)
    c.print(f"  range: {range_label}")
    c.print(
        f"  sent {data['sent']} · received {data['received']} · active days {data['active_days']}"
    )
    c.print(f"  first {(data['first'] or '-')[:10]} · last {(data['last'] or '-')[:10]}")
    r = data["median_reply_s"]
    fmt = lambda s: "-" if s is None else (f"{s / 60:.0f} min" if s < 3600 else f"{s / 3600:.1f} h")  # noqa: E731
    c.print(f"  median reply: me {fmt(r['me'])} · them {fmt(r['them'])}")
    i = data["initiations"]
    c.print(f"  conversations started: me {i['me']} · them {i['them']}")
    if data["top_emoji"]:
        c.print("  top emoji: " + " ".join(f"{e}×{n}" for e, n in data["top_emoji"]))
    if data["busiest_hours"]:
        c.print(
            "  busiest hours: " + ", ".join(f"{h:02d}h ({n})" for h, n in data["busiest_hours"])
        )
    months = month_bars(data.get("by_month") or {}, c.width)
    if months:
        c.print("  messages by month:")
        for line in months:
            c.print(f"    {line}")


@app.command()
@guarded
def show(
    ref: Annotated[str, typer.Argument(metavar="ID", help="message guid or rowid")],
    before: Annotated[int, typer.Option("--before", help="messages before")] = 5,
    after: Annotated[int, typer.Option("--after", help="messages after")] = 5,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """A message with its surrounding conversation."""
    from casper.cli.transport import execute

    args = {"ref": ref, "before": before, "after": after}
    data = execute("show", args, config(home), no_service=no_service)
    if json:
        print_json(data)
        return
    from rich.text import Text

    from casper.cli.render import console, conversation_view, messages_from_doc

    out = console()
    out.print(Text(data["chat"]["name"] or "Unknown chat", style="bold"))
    tz = local_tz(config(home).timezone)  # the zone the document's timestamps were written in
    view = conversation_view(
        messages_from_doc(data["context"]), {}, tz, target=data["message"]["rowid"]
    )
    out.print(view)


@app.command()
@guarded
def doctor(home: Home = None, json: Json = False, verbose: Verbose = False) -> None:
    """Environment and data health: chat.db access, counts, decode rate, coverage."""
    from casper.app.doctor import failed, run_checks
    from casper.service import client, launchagent

    cfg = config(home)
    report = run_checks(cfg, client.status(cfg.data_dir), launchagent.installed(cfg.data_dir))
    if json:
        print_json(report)
        if failed(report):
            raise typer.Exit(1)
        return
    from rich.markup import escape

    from casper.cli.render import console

    c = console()
    for check in report["checks"]:
        mark = {"ok": "[green]✓[/]", "warn": "[yellow]![/]", "fail": "[red]✗[/]"}[check["status"]]
        c.print(f"{mark} {escape(check['name'])}: {escape(str(check['detail']))}")
        if check.get("hint"):
            c.print(f"   [dim]hint: {escape(check['hint'])}[/]")
    if failed(report):
        raise typer.Exit(1)


@app.command()
@guarded
def demo(
    question: Annotated[str | None, typer.Argument(help="question to ask the demo corpus")] = None,
    home: Home = None,
    verbose: Verbose = False,
) -> None:
    """Build the synthetic demo corpus in its own home, index it, show people and stats, ask."""
    from casper.cli.base import _stderr
    from ingest.synthetic import build_demo_corpus

    base = config(home)
    demo_home = base.data_dir / "demo"
    source = demo_home / "source"
    err = _stderr()
    if not (source / "chat.db").exists():
        err.print(f"building the demo corpus in {source} …")
        corpus = build_demo_corpus(source)
        chat_db, contacts = corpus.chat_db, corpus.contacts
    else:
        chat_db, contacts = source / "chat.db", source / "AddressBook"
    cfg = dataclasses.replace(config(demo_home), chat_db=chat_db, contacts=contacts)
    report = run_index(cfg).ingest
    err.print(
        f"demo index: {report.messages_total} messages, {report.chunks_total} chunks "
        f"in {cfg.data_dir}"
    )
    _demo_overview(cfg)
    from casper.cli.ask import ask_once
    from casper.cli.transport import Session

    ask_once(
        cfg,
        question or "When did Sam and I plan Thanksgiving, and who is bringing what?",
        json=False,
        # a one-shot walkthrough: no background service left running afterwards
        session=Session(cfg, no_service=True),
    )


def _demo_overview(cfg: Config) -> None:
    from rich.table import Table
    from rich.text import Text

    from casper.app.runtime import open_store
    from casper.cli.render import console

    store = open_store(cfg)
    tz = local_tz(cfg.timezone)
    table = Table(
        "name",
        "id",
        "sent",
        "received",
        "active days",
        "median reply (them)",
        "top emoji",
        title="People in the demo corpus",
    )
    for p in store.people():
        s = store.stats(p.id) or {}
        reply = (s.get("median_reply_s") or {}).get("them")
        table.add_row(
            Text(p.name),  # a contact's name is data, never markup
            p.id,
            str(s.get("sent", 0)),
            str(s.get("received", 0)),
            str(s.get("active_days", 0)),
            "-" if reply is None else f"{reply / 60:.0f} min",
            " ".join(e for e, _ in s.get("top_emoji", [])[:3]),
        )
    console().print(table)
    _ = tz
