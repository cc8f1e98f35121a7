"""The read commands' work — `search`, `show`, `stats`, `contacts`, `chats` — once, without typer:
the request, where it runs (casper.cli.transport), and what is printed.

The typer commands (`search.py`, `show.py`, …) declare the arguments and call these; so does
the thin path (`thin.py`), which parses those commands without building the typer app. One body
for both is what keeps their output byte for byte the same.

Imports: stdlib, casper.config, casper.cli.guard; the rest (rendering, rich, the transport)
inside the functions.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casper.cli.guard import print_json, stderr_console
from casper.config import load_config

if TYPE_CHECKING:
    from casper.app.documents import SearchDoc
    from casper.events import Event
    from casper.service.client import Sent


def search(
    query: str,
    *,
    person: str | None = None,
    chat: str | None = None,
    since: str | None = None,
    until: str | None = None,
    k: int | None = None,
    mode: str = "hybrid",
    lexical: str | None = None,
    no_rerank: bool = False,
    literal: bool = False,
    home: Path | None = None,
    json: bool = False,
    no_service: bool = False,
    sent: Sent | None = None,
) -> None:
    """`casper search`: retrieval only (see casper/cli/search.py for the options). `sent`:
    the request, already sent to the running service by the thin path."""
    from casper.app.requests import SearchRequest, parse_as
    from casper.cli.transport import Session, print_notice

    args = {
        "query": query,
        "person": person,
        "chat": chat,
        "since": since,
        "until": until,
        "k": k,
        "mode": mode,
        "lexical": lexical,
        "rerank": not no_rerank,
        "literal": literal,
    }
    request = parse_as(SearchRequest, "search", args)  # checked once, before anything starts

    def on_event(event: Event) -> None:
        if event["event"] == "read_as":
            if not json:  # how the question was read, for people; --json has `understood`
                line = f"read as: {event['text']} (--literal to search as typed)"
                stderr_console().print(line, style="dim", markup=False, soft_wrap=True)
            return
        if event["event"] == "notice" and event.get("key") == "reranker" and not json:
            return  # the line under the hits says it, every time
        print_notice(event)

    cfg = load_config(home)
    if sent is not None and not json:
        import casper.cli.render  # noqa: F401 - what draws the hits loads while the service works
    doc = Session(cfg, no_service=no_service).answer(request, on_event, sent)
    if json:
        print_json(doc)
        return
    from casper.cli.render import console, hits_from_doc, hits_view

    out = console()
    absent = _absent_line(doc)
    if absent:
        print_notice({"event": "notice", "text": absent})
    if not doc["hits"]:
        out.print(_nothing_line(doc), soft_wrap=True, markup=False)
        return
    from casper.dates.zones import local_tz

    tz = local_tz(cfg.timezone)  # the zone the document's timestamps were written in
    out.print(hits_view(hits_from_doc(doc["hits"]), tz, query, words=doc.get("words")))
    if not doc.get("reranked") and not no_rerank and cfg.rerank:
        # asked for and not run: said under the hits every time (a choice is not repeated)
        line = f"not reranked: {doc.get('why_not_reranked')}"
        stderr_console().print(line, style="dim", markup=False, soft_wrap=True)


def _absent_line(doc: SearchDoc) -> str | None:
    """`no message contains 'birthday'; …`: a word that occurs nowhere is said, so hits that
    match the rest of the search (or only its meaning) are not taken for matches of it."""
    from casper.search.words import absent_notice

    absent = doc.get("words_not_found") or []
    return absent_notice(absent, doc.get("words") or ()) if absent else None


def _nothing_line(doc: SearchDoc) -> str:
    """`no matching messages`, with the days --since/--until meant and what the history covers
    when they were given: an empty answer never hides a range outside the history."""
    from casper.app.coverage import runs_from, span_text

    days = doc["filters"].get("days")
    if not days:
        return "no matching messages"
    first, last = (date.fromisoformat(d) if d else None for d in days)
    cov = doc.get("coverage")
    covered = (cov["first"], cov["last"]) if cov else None
    return f"no matching messages {span_text(first, last)}; {runs_from(covered)}"


def show(
    ref: str,
    *,
    before: int = 5,
    after: int = 5,
    home: Path | None = None,
    json: bool = False,
    no_service: bool = False,
    sent: Sent | None = None,
) -> None:
    """`casper show`: a message with its surrounding conversation."""
    from casper.app.requests import ShowRequest, parse_as
    from casper.cli.transport import Session

    args = {"ref": ref, "before": before, "after": after}
    cfg = load_config(home)
    request = parse_as(ShowRequest, "show", args)
    data = Session(cfg, no_service=no_service).answer(request, sent=sent)
    if json:
        print_json(data)
        return
    from rich.text import Text

    from casper.cli.render import console, conversation_view, messages_from_doc
    from casper.dates.zones import local_tz

    out = console()
    out.print(Text(data["chat"]["name"] or "Unknown chat", style="bold"))
    tz = local_tz(cfg.timezone)  # the zone the document's timestamps were written in
    view = conversation_view(
        messages_from_doc(data["context"]), {}, tz, target=data["message"]["id"]
    )
    out.print(view)


def stats(
    person: str | None = None,
    *,
    chat: str | None = None,
    since: str | None = None,
    until: str | None = None,
    by: str | None = None,
    png: Path | None = None,
    force: bool = False,
    home: Path | None = None,
    json: bool = False,
    no_service: bool = False,
    sent: Sent | None = None,
) -> None:
    """`casper stats`: the figures and pictures of a person, a chat or group, or the owner
    overall (all time, or computed for a --since/--until range); `--png` draws them too
    (never over a file, or through a link, without `force`)."""
    from casper.app.requests import StatsRequest, parse_as
    from casper.cli.transport import Session

    if png is not None:  # before the work, not after it; a mistyped folder is never made
        from casper.app.outfile import folder_exists, refuse_existing

        refuse_existing(png, force)
        folder_exists(png)
    cfg = load_config(home)
    args = {"person": person, "chat": chat, "since": since, "until": until, "period": by}
    request = parse_as(StatsRequest, "stats", args)
    data = Session(cfg, no_service=no_service).answer(request, sent=sent)
    if png is not None:
        from casper.cli.charts import write_png

        write_png(data, png, cfg.data_dir, force=force)
    if json:
        print_json(data)
        return
    from casper.cli.stats_view import print_stats

    print_stats(data)
    if png is not None:
        stderr_console().print(f"wrote {png}", soft_wrap=True, markup=False)


def contacts(
    *,
    home: Path | None = None,
    json: bool = False,
    no_service: bool = False,
    sent: Sent | None = None,
) -> None:
    """`casper contacts`: people with handles and message counts."""
    from casper.app.requests import ContactsRequest
    from casper.cli.transport import Session

    session = Session(load_config(home), no_service=no_service)
    rows = session.answer(ContactsRequest(), sent=sent)  # no arguments to check
    if json:
        print_json(rows)
        return
    from rich.text import Text

    from casper.cli.render import console, contacts_notes, contacts_table

    out = console()
    out.print(contacts_table(rows, out.width))
    for note in contacts_notes(rows):
        out.print(Text(note, style="dim"))


def chats(*, home: Path | None = None, json: bool = False) -> None:
    """`casper chats`: chats with their ids (in this process: it reads the store only)."""
    from casper.app.chats import list_chats
    from casper.app.runtime import store_to_show
    from casper.cli.render import chats_table, console
    from casper.dates.zones import local_tz

    cfg = load_config(home)
    if not cfg.store_path.exists():
        from casper.cli.invocation import missing_index

        raise missing_index(cfg)
    rows = list_chats(store_to_show(cfg), local_tz(cfg.timezone))
    if json:
        print_json(rows)
        return
    out = console()
    out.print(chats_table(rows))


# what each body is called with beyond its own options: the thin path checks it knows them all
BODIES: dict[str, Any] = {
    "search": search,
    "show": show,
    "stats": stats,
    "contacts": contacts,
    "chats": chats,
}
