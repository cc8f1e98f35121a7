"""`casper search`: retrieval only, no LLM (the work runs in the service or in-process; the
body is `reads.search`, which the thin path calls too)."""

from __future__ import annotations

from typing import Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, default_of, guarded
from casper.vocab import Lexical, Mode

# inside the commands: `casper --help` imports every command module; the work loads when it runs


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
    from casper.cli import reads

    reads.search(
        query, person=person, chat=chat, since=since, until=until, k=k, mode=mode,
        lexical=lexical, no_rerank=no_rerank, literal=literal, home=home, json=json,
        no_service=no_service,
    )  # fmt: skip
