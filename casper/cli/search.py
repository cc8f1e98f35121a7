"""`casper search`: retrieval only, no LLM (the work runs in the service or in-process)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, config, default_of, guarded
from casper.search.modes import Lexical, Mode

if TYPE_CHECKING:
    from casper.app.documents import SearchDoc


@app.command()
@guarded
def search(
    query: Annotated[str, typer.Argument(help="what to look for")],
    person: Annotated[str | None, typer.Option("--person", help="name, handle or id")] = None,
    chat: Annotated[str | None, typer.Option("--chat", help="chat name or id")] = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO date or phrase")] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="ISO date or phrase (whole day)")
    ] = None,
    k: Annotated[
        int | None, typer.Option("-k", help=f"number of hits {default_of('top_k')}")
    ] = None,
    mode: Annotated[Mode, typer.Option("--mode", help="which legs to search")] = "hybrid",
    lexical: Annotated[
        Lexical | None,
        typer.Option("--lexical", help=f"word index {default_of('lexical')}"),
    ] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="skip the cross-encoder")] = False,
    literal: Annotated[
        bool, typer.Option("--literal", help="search the words as typed: no date/people reading")
    ] = False,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """Retrieval only, no LLM: hybrid BM25 + vector, fused; reranked by the cross-encoder when
    it is cached (`casper pull`), and said when it is not."""
    from casper.app.requests import parse
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
    request = parse("search", args)  # checked once, before anything starts

    def on_event(event: dict) -> None:
        if event.get("event") == "read_as":
            if not json:  # how the question was read, for people; --json has `understood`
                from casper.cli.base import _stderr

                line = f"read as: {event['text']} (--literal to search as typed)"
                _stderr().print(line, style="dim", markup=False, soft_wrap=True)
            return
        if event.get("key") == "reranker" and not json:
            return  # the line under the hits says it, every time
        print_notice(event)

    cfg = config(home)
    doc: SearchDoc = Session(cfg, no_service=no_service).answer(request, on_event)
    if json:
        from casper.cli.base import print_json

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
        from casper.cli.base import _stderr

        # asked for and not run: said under the hits every time (a choice is not repeated)
        line = f"not reranked: {doc.get('why_not_reranked')}"
        _stderr().print(line, style="dim", markup=False, soft_wrap=True)


def _absent_line(doc: SearchDoc) -> str | None:
    """`no message contains 'birthday'; …`: a word that occurs nowhere is said, so hits that
    match the rest of the search (or only its meaning) are not taken for matches of it."""
    from casper.search.words import absent_notice

    absent = doc.get("words_not_found") or []
    return absent_notice(absent, doc.get("words") or ()) if absent else None


def _nothing_line(doc: SearchDoc) -> str:
    """`no matching messages`, with the days --since/--until meant and what the history covers
    when they were given: an empty answer never hides a range outside the history."""
    from datetime import date

    from casper.app.coverage import runs_from, span_text

    days = doc["filters"].get("days")
    if not days:
        return "no matching messages"
    first, last = (date.fromisoformat(d) if d else None for d in days)
    cov = doc.get("coverage")
    covered = (cov["first"], cov["last"]) if cov else None
    return f"no matching messages {span_text(first, last)}; {runs_from(covered)}"
