"""`casper search` and the retriever wiring shared with `ask` and `eval`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from casper.commands.base import (
    Home,
    Json,
    Verbose,
    _stderr,
    app,
    config,
    default_of,
    guarded,
)
from casper.commands.wiring import open_index, open_store
from casper.config import Config
from casper.store.db import Store
from casper.timeutil import local_tz


def make_retriever(
    cfg: Config,
    store: Store,
    *,
    rerank: bool = True,
    lexical: str | None = None,
    mode: str = "hybrid",
) -> Any:
    """Embedder + index + (optional) reranker → Retriever.

    With `mode="bm25"` the embedder is a LazyEmbedder: built (and checked against the index)
    only if a vector is ever asked for, so a BM25 search never imports torch. A reranker that
    can't be loaded is said once (remembered in the data dir) and then only by `casper doctor`.
    """
    from casper.answer import covered_days
    from casper.backends import factory
    from casper.backends.optional import load_reranker
    from casper.query import Reader
    from casper.retrieve import Retriever

    if mode == "bm25":
        from casper.backends.lazy import LazyEmbedder

        index = open_index(cfg, None)
        embedder: Any = LazyEmbedder(
            lambda: factory.make_embedder(cfg), name=cfg.embed_model, check=index.check_embedder
        )
    else:
        embedder = factory.make_embedder(cfg)
        index = open_index(cfg, embedder)
    _same_history(index, store)
    say = lambda line: _stderr().print(line, style="dim", highlight=False, soft_wrap=True)  # noqa: E731
    reranker = load_reranker(cfg, say) if rerank else None
    return Retriever(
        index,
        embedder,
        reranker,
        store=store,
        candidates=cfg.candidates,
        top_k=cfg.top_k,
        lexical=lexical or cfg.lexical,
        reader=Reader(
            people=[(p.id, p.name) for p in store.people()],
            me_names=cfg.me_names,
            locale=cfg.locale,
            tz=local_tz(cfg.timezone),
            coverage=covered_days(store, local_tz(cfg.timezone)),
        ),
    )


def _same_history(index: Any, store: Store) -> None:
    """An index built from another history (the store was reset and `casper index` did not
    finish) must not label new messages with old chunks."""
    from casper.errors import IndexMismatch

    built_from = (index.manifest.get("source") or {}).get("store_id")
    if built_from and built_from != (store.get_meta("store_id") or built_from):
        raise IndexMismatch(
            "the search index was built from another message history",
            hint="run `casper index` to rebuild it for the current one",
        )


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
    mode: Annotated[str, typer.Option("--mode", help="hybrid | bm25 | vector")] = "hybrid",
    lexical: Annotated[str | None, typer.Option("--lexical", help="lancedb | rank-bm25")] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="skip the cross-encoder")] = False,
    literal: Annotated[
        bool, typer.Option("--literal", help="search the words as typed: no date/people reading")
    ] = False,
    home: Home = None,
    json: Json = False,
    verbose: Verbose = False,
) -> None:
    """Retrieval only, no LLM: hybrid BM25 + vector, fused, reranked."""
    from casper.errors import CasperError
    from casper.inputs import date_range, require_positive_k, require_text
    from casper.render import hit_json, print_json

    require_text(query, what="query", example='casper search "dentist appointment"')
    require_positive_k(k)
    if mode not in ("hybrid", "bm25", "vector"):
        raise CasperError(f"unknown mode {mode!r}", hint="use hybrid, bm25 or vector")
    if lexical not in (None, "lancedb", "rank-bm25"):
        raise CasperError(f"unknown lexical backend {lexical!r}", hint="use lancedb or rank-bm25")
    cfg = config(home)
    tz = local_tz(cfg.timezone)
    start, end = date_range(since, until, tz, locale=cfg.locale)
    store = open_store(cfg)
    person_id = store.resolve_person(person).id if person else None
    chat_id = None
    if chat:
        found = store.find_chats(chat)
        if len(found) != 1:
            names = ", ".join(f"{c.name} ({c.id})" for c in found) or "none"
            raise CasperError(
                f"--chat {chat!r} matches {len(found)} chats: {names}",
                hint="pass the chat id (`casper chats` lists them)",
            )
        chat_id = found[0].id
    retriever = make_retriever(cfg, store, rerank=not no_rerank, lexical=lexical, mode=mode)
    hits = retriever.search(
        query,
        person_id=person_id,
        chat_id=chat_id,
        since=start,
        until=end,
        k=k,
        mode=mode,
        rerank=not no_rerank,
        literal=literal,
    )
    understood = retriever.understood
    say_notices(retriever.notices)
    if json:
        filters = {
            "person": person_id,
            "chat": chat_id,
            "since": since,
            "until": until,
            "mode": mode,
            "lexical": lexical or cfg.lexical,
            "rerank": not no_rerank,
        }
        doc = {"query": query, "filters": filters}
        if understood is not None:
            doc["understood"] = understood.to_json()
        print_json({**doc, "hits": [hit_json(h, tz) for h in hits]})
        return
    from casper.render_text import console, hits_view

    out = console()
    if understood is not None and understood.rewritten:
        from rich.markup import escape  # the summary quotes the query: data, not markup

        line = f"[dim]read as: {escape(understood.summary())} (--literal to search as typed)[/]"
        _stderr().print(line, soft_wrap=True)
    if not hits:
        out.print("no matching messages")
        return
    out.print(hits_view(hits, tz, query))


_SAID: set[str] = set()


def say_notices(notices: list[str]) -> None:
    """Print each notice (a partly built semantic index, …) to stderr once per process."""
    for notice in notices:
        if notice not in _SAID:
            _SAID.add(notice)
            _stderr().print(f"[yellow]notice:[/] {notice}")
