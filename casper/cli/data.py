"""Data commands: contacts, stats, show, doctor, demo (`index` is casper.cli.indexing)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, config, guarded, print_json
from casper.cli.indexing import Interrupted, kept_line, run_index  # registers `index` first
from casper.config import Config
from casper.dates.zones import local_tz


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
    cfg = config(home)
    data = execute("show", args, cfg, no_service=no_service)
    if json:
        print_json(data)
        return
    from rich.text import Text

    from casper.cli.render import console, conversation_view, messages_from_doc

    out = console()
    out.print(Text(data["chat"]["name"] or "Unknown chat", style="bold"))
    tz = local_tz(cfg.timezone)  # the zone the document's timestamps were written in
    view = conversation_view(
        messages_from_doc(data["context"]), {}, tz, target=data["message"]["rowid"]
    )
    out.print(view)


@app.command()
@guarded
def doctor(home: Home = None, json: Json = False, verbose: Verbose = False) -> None:
    """Environment and data health: chat.db access, counts, decode rate, coverage."""
    from casper.app.doctor import failed, run_checks
    from casper.config import checked_config
    from casper.service import client, launchagent

    # every value of config.toml checked; one that is refused is shown, the rest still run
    cfg, refused = checked_config(home)
    report = run_checks(
        cfg, client.status(cfg.data_dir), launchagent.installed(cfg.data_dir), refused
    )
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
    from casper.store.db import ensure_private_dir
    from ingest.synthetic import DEMO_TIMEZONE, build_demo_corpus

    base = config(home)
    demo_home = base.data_dir / "demo"
    source = demo_home / "source"
    err = _stderr()
    for folder in (base.data_dir, demo_home):  # owner-only, like every data dir
        ensure_private_dir(folder)
    if not (source / "chat.db").exists():
        err.print(f"building the demo corpus in {source} …")
        corpus = build_demo_corpus(source)
        chat_db, contacts = corpus.chat_db, corpus.contacts
    else:
        chat_db, contacts = source / "chat.db", source / "AddressBook"
    _owner_only(source)  # a chat history, even a made-up one, is 0700/0600 (also one built before)
    own = config(demo_home)
    # the demo's story happens in its people's zone, not the machine's (unless set in its
    # config.toml); kept there, so every command pasted from below reads the same clock
    zone = own.timezone or DEMO_TIMEZONE
    cfg = dataclasses.replace(own, chat_db=chat_db, contacts=contacts, timezone=zone)
    from casper.cli.invocation import command_line

    try:
        report = run_index(cfg).ingest
    except Interrupted as stop:
        again = command_line(base.data_dir, "demo")
        err.print(kept_line(cfg, stop.ran, again), soft_wrap=True, markup=False)
        raise typer.Exit(130) from None
    # the demo home reads the demo's chat.db from now on: `casper --home …/demo index` or
    # `doctor`, pasted from the lines below, never reach for the real Messages
    from casper.config import remember

    remember(demo_home, chat_db=chat_db.resolve(), contacts=contacts.resolve(), timezone=zone)
    err.print(
        f"demo index: {report.messages_total:,} messages, {report.chunks_total:,} chunks "
        f"in {cfg.data_dir}; its times are in {zone}, where its people live",
        soft_wrap=True,
    )
    _demo_overview(cfg)
    from casper.cli.ask import ask_once
    from casper.cli.transport import Session

    answered = ask_once(
        cfg,
        question or "When did Sam and I plan Thanksgiving, and who is bringing what?",
        json=False,
        # a one-shot walkthrough: no background service left running afterwards
        session=Session(cfg, no_service=True),
    )
    cited = answered.get("citations") or []
    _demo_next_steps(cfg, cited[0]["rowid"] if cited else None)


def _owner_only(folder: Path) -> None:
    """Every folder under `folder` 0700 and every file 0600."""
    os.chmod(folder, 0o700)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o700)
        for name in files:
            os.chmod(os.path.join(root, name), 0o600)


def _demo_overview(cfg: Config) -> None:
    from rich.text import Text

    from casper.app.runtime import open_store
    from casper.cli.render import console, people_stats_table

    store = open_store(cfg)
    try:
        rows = []
        for p in store.people():
            s = store.stats(p.id) or {}
            rows.append({
                "id": p.id, "name": p.name, "sent": s.get("sent", 0),
                "received": s.get("received", 0), "active_days": s.get("active_days", 0),
                "median_reply_them_s": (s.get("median_reply_s") or {}).get("them"),
                "top_emoji": [e for e, _ in s.get("top_emoji", [])],
            })  # fmt: skip
    finally:
        store.close()
    rows.sort(key=lambda r: -(r["sent"] + r["received"]))
    out = console()
    out.print(Text("People in the demo corpus", style="bold"))
    out.print(people_stats_table(rows, out.width))


def _demo_next_steps(cfg: Config, cited: int | None) -> None:
    """Commands to try next, each ready to paste (the demo's own home with --home)."""
    from rich.text import Text

    from casper.cli.invocation import command_line
    from casper.cli.render import console

    out = console()
    out.print()
    out.print(Text("Try it yourself on the demo (paste any line):", style="bold"))
    lines = [command_line(cfg.data_dir, "show", str(cited))] if cited else []
    lines += [
        command_line(cfg.data_dir, "search", "dentist", "--person", "Priya"),
        command_line(cfg.data_dir, "ask", "who do I text the most?"),
        command_line(cfg.data_dir, "stats", "Sam"),
        command_line(cfg.data_dir, "chat"),
    ]
    for line in lines:
        out.print(Text(f"  {line}"), soft_wrap=True)
    own = cfg.data_dir.parent  # the data dir the demo lives in: where a real index goes
    out.print(
        Text(
            f"Your own Messages: `{command_line(own, 'doctor')}` checks Casper can read them, "
            f"`{command_line(own, 'index')}` reads them (never into the demo's data dir).",
            style="dim",
        ),
        soft_wrap=True,
    )
