"""`casper demo`: the synthetic demo corpus in its own home, indexed, shown and asked."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Annotated

import typer

from casper.cli.ask import ask_once
from casper.cli.base import Home, Verbose, _stderr, app, config, guarded
from casper.cli.indexing import Interrupted, kept_line, run_index
from casper.config import Config, remember

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def demo(
    question: Annotated[str | None, typer.Argument(help="question to ask the demo corpus")] = None,
    home: Home = None,
    verbose: Verbose = False,
) -> None:
    """Build the synthetic demo corpus in its own home, index it, show people and stats, ask."""
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

    remember(demo_home, chat_db=chat_db.resolve(), contacts=contacts.resolve(), timezone=zone)
    err.print(
        f"demo index: {report.messages_total:,} messages, {report.chunks_total:,} chunks "
        f"in {cfg.data_dir}; its times are in {zone}, where its people live",
        soft_wrap=True,
    )
    _demo_overview(cfg)
    from casper.cli.transport import Session

    answered = ask_once(
        cfg,
        question or "When did Sam and I plan Thanksgiving, and who is bringing what?",
        json=False,
        # a one-shot walkthrough: no background service left running afterwards
        session=Session(cfg, no_service=True),
    )
    cited = answered.get("citations") or []
    _demo_next_steps(cfg, cited[0]["id"] if cited else None)


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
