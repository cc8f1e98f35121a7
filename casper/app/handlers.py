"""The client-facing commands as functions: a Runtime and arguments → the `--json` document.

The same functions run in the CLI process (`CASPER_SERVICE=0`, `--no-service`) and inside the
background service, so both paths print identical documents by construction. Progress leaves
through `emit` as the events the views and the socket share (casper.events: `notice`, `read_as`,
`loading`, and the agent's `step`, `tool`, `tool_done`, `token`). Arguments are checked once, by
casper.app.requests, before a handler runs; what an answer decides (its retries, its grounding,
what its searches said of the question's words) is the agent's (casper.agent.answer_run).

Imports: requests, runtime, use-cases, documents, events, ingest (a tapback's row in chat.db);
heavy libraries only through them, lazily.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from casper.agent.core import Limits
from casper.app.coverage import coverage_days, nothing_then, outside
from casper.app.documents import hit_json, message_json
from casper.app.optional_models import engine_loaded, engine_unavailable, not_reranked_because
from casper.app.requests import (
    AskRequest,
    ContactsRequest,
    Request,
    SearchRequest,
    ShowRequest,
    StatsRequest,
    ToolRequest,
    parse,
)
from casper.app.runtime import Runtime, engine_key, me_names
from casper.config import llm_server
from casper.dates.ranges import days_to_utc, span_days
from casper.dates.zones import iso, local_tz
from casper.errors import CasperError
from casper.events import Emit, ignore, notice
from casper.store.stats_query import chat_split, sent_in_groups
from ingest.connect import open_chat_db
from ingest.errors import IngestError

if TYPE_CHECKING:
    from datetime import date, tzinfo
    from zoneinfo import ZoneInfo

    from casper.app.documents import (
        AskDoc,
        AskFilters,
        ContactJson,
        Document,
        ReactionAsked,
        Reranked,
        SearchDoc,
        SearchFilters,
        ShowDoc,
        StatsDoc,
    )
    from casper.protocols import Engine
    from casper.search.retriever import SearchResult
    from casper.store.db import Store

# inside: the cold lexical search loads this module, not the answer, the stats or the tools


def _notice(emit: Emit, key: str | None = None) -> Callable[[str], None]:
    """A `say` for notices; `key` names the kind (a view that says it another way skips it)."""

    def say(text: str) -> None:
        event = notice(text)
        if key:
            event["key"] = key
        emit(event)

    return say


def zone(rt: Runtime) -> ZoneInfo:
    """The one zone every command uses (casper.dates.zones.local_tz of the config)."""
    return local_tz(rt.cfg.timezone)


def run(rt: Runtime, cmd: str, args: Mapping[str, object], emit: Emit = ignore) -> Document:
    """Check one request (casper.app.requests: the one place arguments are validated, for
    both transports) and answer it; a bad command or argument is a CasperError with a hint."""
    return answer(rt, parse(cmd, args), emit)


def answer(rt: Runtime, request: Request, emit: Emit = ignore) -> Document:
    """Answer a checked request; never from a store that may still hold whom config.toml keeps
    out (`exclude` added since the last index run): NotAppliedYet until a run purges them."""
    kept_out = rt.kept_out()
    if kept_out:
        # inside: the indexer's modules load only for a history that keeps someone out
        from casper.indexer.exclude import require_applied

        require_applied(rt.store(), kept_out)
    match request:
        case SearchRequest():
            return search(rt, request, emit)
        case ContactsRequest():
            return contacts(rt, emit)
        case StatsRequest():
            return stats(rt, request, emit)
        case ShowRequest():
            return show(rt, request, emit)
        case AskRequest():
            return ask(rt, request, emit)
        case ToolRequest():
            from casper.app.tool_calls import call_tool

            return call_tool(rt, request, emit)
    raise AssertionError(f"no handler for {type(request).__name__}")


def _say_notices(rt: Runtime, result: SearchResult, emit: Emit) -> None:
    """A search's notices (a partly built semantic index, …), each kind once per process."""
    for said in result.notices:
        if rt.first_time(said.key):
            emit(notice(said.text))


def search(rt: Runtime, req: SearchRequest, emit: Emit = ignore) -> SearchDoc:
    tz = zone(rt)
    days = span_days(req.since, req.until, tz, locale=rt.cfg.locale)  # read once, before opening
    start, end = days_to_utc(*days, tz)
    store = rt.store()
    person_id = store.resolve_person(req.person).id if req.person else None
    chat_id = None
    if req.chat:
        chat_id = store.resolve_chat(req.chat).id
    retriever = rt.retriever(lexical=req.lexical, mode=req.mode)
    through = store.indexed_through()  # before searching: the search sees at least this much
    result = retriever.search(
        req.query,
        person_id=person_id,
        chat_id=chat_id,
        since=start,
        until=end,
        k=req.k,
        mode=req.mode,
        rerank=req.rerank,
        reranker=rt.reranker(_notice(emit, "reranker")) if req.rerank else None,
        literal=req.literal,
    )
    _say_notices(rt, result, emit)
    understood = result.understood
    if understood.rewritten:
        emit({"event": "read_as", "text": understood.summary()})
    covered = coverage_days(*store.coverage(), tz)
    if understood.date_range and days == (None, None):
        # the question's own dates: said when none of the hits is from them
        starts = [h.start for h in result.hits]
        said = nothing_then(understood.date_range, starts, covered, tz)
        if said:
            emit(notice(said))
    filters: SearchFilters = {
        "person": person_id,
        "chat": chat_id,
        "since": req.since,
        "until": req.until,
        "mode": req.mode,
        "lexical": req.lexical or rt.cfg.lexical,
        "rerank": req.rerank,
    }
    if days != (None, None):  # the days --since/--until were read as (phrases resolved)
        filters["days"] = [d.isoformat() if d else None for d in days]
    return {
        "query": req.query,
        "filters": filters,
        "coverage": covered and {"first": covered[0], "last": covered[1]},
        "understood": understood.to_json(),
        **ran_json(rt, req.rerank, result.reranked),
        # the words hits are measured by (`matched_words` per hit) and those in no message
        "words": list(result.words),
        "words_not_found": list(result.words_not_found),
        "hits": [hit_json(h, tz, result.words) for h in result.hits],
        "indexed_through": iso(through, tz),
    }


def ran_json(rt: Runtime, asked: bool, reranked: bool) -> Reranked:
    """`reranked` (what ran, not what was asked) and, when false, why not."""
    if reranked:
        return {"reranked": True}

    return {"reranked": False, "why_not_reranked": not_reranked_because(rt.cfg, asked)}


def contacts(rt: Runtime, emit: Emit = ignore) -> list[ContactJson]:
    tz = zone(rt)
    store = rt.store()

    in_groups = sent_in_groups(store)
    rows: list[ContactJson] = []
    for p in store.people():
        s = store.stats(p.id) or {}
        rows.append(
            {
                "id": p.id,
                "name": p.name,
                "handles": list(p.handles),
                # the card's names (first, last, nickname, organization, full): what a
                # question may call them; {} for a bare handle
                "names": dict(p.names),
                "sent": s.get("sent", 0),  # one-to-one: the owner's group messages are no one's
                "received": s.get("received", 0),
                "sent_in_groups": in_groups.get(p.id, 0),
                "first": iso(s.get("first"), tz),
                "last": iso(s.get("last"), tz),
            }
        )
    rows.sort(key=lambda r: -(r["sent"] + r["received"]))
    return rows


def stats(rt: Runtime, req: StatsRequest, emit: Emit = ignore) -> StatsDoc:
    from casper.app.stats_scope import resolve_scope, stats_document

    tz = zone(rt)
    span = span_days(req.since, req.until, tz, locale=rt.cfg.locale)  # before opening
    store = rt.store()
    scope = resolve_scope(store, req.person, req.chat)
    _say_if_outside(store, span, tz, emit)
    doc = stats_document(store, scope, tz, span, period=req.period)
    if scope.person is not None:
        # a person's `sent` is one-to-one, `received` everywhere: both, apart
        doc["chats"] = chat_split(store, scope.person.id, *days_to_utc(*span, tz))
    return doc


def _say_if_outside(
    store: Store, days: tuple[date | None, date | None], tz: tzinfo, emit: Emit
) -> None:
    """Zeros for "last March" on a history that ended before it are no finding: say the days
    and what the history covers, as `search` does."""
    said = outside(days, coverage_days(*store.coverage(), tz))
    if said:
        emit(notice(said))


def show(rt: Runtime, req: ShowRequest, emit: Emit = ignore) -> ShowDoc:
    tz = zone(rt)
    store = rt.store()
    msg = store.message(req.ref)
    names = store.names()
    asked: ReactionAsked | None = None
    if msg is None:  # a tapback's row? Then the message it reacts to, and say so
        found = _reaction_at(rt, store, req.ref)
        if found is not None:
            target, sender, label, guid = found
            msg = store.message(target)
            if msg is not None:
                asked = {"ref": req.ref, "guid": guid, "reaction": label,
                         "sender": names.get(sender, sender), "to": msg.rowid}  # fmt: skip
                who = "your" if sender == "me" else f"{asked['sender']}'s"
                emit(notice(f"{req.ref} is {who} {label} reaction to #{msg.rowid}; "
                            f"showing #{msg.rowid}"))  # fmt: skip
    if msg is None:
        raise CasperError(
            f"no message {req.ref!r}", hint="use a rowid or guid from `casper search`"
        )
    ctx = store.context(msg, req.before, req.after)
    chat = store.chat(msg.chat_id)
    doc: ShowDoc = {
        "message": message_json(msg, names, tz, chat.name if chat else None),
        "context": [message_json(m, names, tz, chat.name if chat else None) for m in ctx],
        "chat": {"id": msg.chat_id, "name": chat.name if chat else None},
    }
    if asked is not None:
        doc["reaction"] = asked  # what was asked for: a reaction to `message`
    return doc


def _reaction_at(rt: Runtime, store: Store, ref: str) -> tuple[str, str, str, str] | None:
    """(target guid, sender, label, the reaction's guid) when `ref` (a rowid or guid) is a
    tapback: reactions are folded into their message, so their rows are not messages. A rowid
    is looked up in chat.db (read-only); None when it can't be read or it is no reaction."""
    text = str(ref).strip().lstrip("#")
    guid: str | None = text
    if text.isdigit():
        try:
            conn = open_chat_db(rt.cfg.chat_db)
            try:
                row = conn.execute("SELECT guid FROM message WHERE ROWID=?", (int(text),))
                found = row.fetchone()
            finally:
                conn.close()
        except (IngestError, sqlite3.Error, OSError):
            return None
        guid = found[0] if found else None
    reaction = store.reaction(guid) if guid else None
    return (*reaction, guid) if reaction is not None and guid else None


def ask(rt: Runtime, req: AskRequest, emit: Emit = ignore) -> AskDoc:
    """One question through the agent (or retrieval alone); the model loads once per Runtime.

    With a model server (`base_url`, or the setting `llm_base_url`) its host is checked before
    anything else (a remote one is refused unless `allow_remote_llm`, and then said on every
    answer); a server that fails mid-answer leaves the answer to search alone, said in a
    notice (casper.agent.answer_run)."""
    from casper.agent.answer_run import run_answer

    server, privacy = _model_server(rt, req, emit)
    tz = zone(rt)  # the zone `index`, `stats` and `search` use too
    days = _ask_days(rt, req, tz)  # --since/--until read before anything opens, as search
    store = rt.store()
    scope = _ask_scope(store, req, tz, days)
    retriever = rt.retriever()
    reranker = rt.reranker(_notice(emit, "reranker"))
    through = store.indexed_through()  # before searching: the answer sees at least this much
    _say_if_behind(rt, store, req.question, emit)

    def search(query: str, **options: Any) -> SearchResult:
        """The agent's search: this request's reranker and scope, notices said as they come."""
        result = retriever.search(query, reranker=reranker, **scope.within(options))
        _say_notices(rt, result, emit)
        return result

    engine, load_s = _engine(rt, req, server, emit)
    run = run_answer(
        req.question,
        store=store,
        search=search,
        engine=engine,
        tz=tz,
        limits=Limits(max_iterations=req.max_iterations or rt.cfg.max_iterations),
        load_s=load_s,
        history=req.history,
        on_event=emit,  # the agent's events are the ones the views and the socket carry
        locale=rt.cfg.locale,
        me_names=me_names(rt.cfg, store),
        no_llm=req.no_llm,
        privacy=privacy,
    )
    reranked = ran_json(rt, True, run.reranked)
    if not run.reranked and not run.searches:
        reranked["why_not_reranked"] = "no search ran"
    filters: AskFilters = {
        "person": scope.person_id,
        "chat": scope.chat_id,
        "since": req.since,
        "until": req.until,
    }
    if req.since or req.until:  # the days they were read as (phrases resolved)
        filters["days"] = [d.isoformat() if d else None for d in days]
    return {
        **run.asked.to_dict(),
        **reranked,
        "filters": filters,
        "words_not_found": list(run.words_not_found),
        # in some message, but in none the question's searches found (nor the answer cites)
        "words_not_in_hits": list(run.words_not_in_hits),
        "llm_server": server,
        "indexed_through": iso(through, tz),
    }


def _model_server(rt: Runtime, req: AskRequest, emit: Emit) -> tuple[str | None, str]:
    """(the model server this answer goes to, None: MLX or no model; the privacy its tool
    results are shown under): a server on another machine, allowed, is said on every answer
    and held to the same ceiling as MCP."""
    server = None if req.no_llm else (req.base_url or rt.cfg.llm_base_url)
    privacy = "full"  # a model on this machine reads what the owner reads
    if server is not None:
        server, local = llm_server(server, allow_remote=rt.cfg.allow_remote_llm)
        if not local:
            privacy = rt.cfg.privacy  # another machine's model: the same ceiling as MCP
            limited = "" if privacy == "full" else f"; what the tools show it: privacy {privacy}"
            emit(notice(remote_notice(server) + limited))
    return server, privacy


def _engine(
    rt: Runtime, req: AskRequest, server: str | None, emit: Emit
) -> tuple[Engine | None, float]:
    """(the chat engine, None: answer from search alone; seconds spent loading it, ~0 when
    this Runtime already holds it). A model that cannot load is said once per data dir until
    something changes; `casper doctor` has it all."""
    if req.no_llm:
        return None, 0.0
    loading = time.perf_counter()
    name = req.model or rt.cfg.llm_model
    if not rt.engine_loaded(name, server):
        emit({"event": "loading", "what": engine_key(name, server)})
    engine, failure = rt.engine(name, server)
    if failure is not None:
        said = engine_unavailable(rt.cfg, name, failure)
        if said:
            emit(notice(said))
    elif server is None:
        engine_loaded(rt.cfg, name)
    return engine, time.perf_counter() - loading


@dataclass(frozen=True, slots=True)
class AskScope:
    """What `ask --person/--chat/--since/--until` keeps every search of the answer to."""

    since: float | None = None  # UTC seconds
    until: float | None = None
    person_id: str | None = None
    chat_id: int | None = None

    def within(self, options: dict[str, Any]) -> dict[str, Any]:
        """A search the agent (or the prefetch) asks for, kept inside the scope: its person
        and chat, and its dates cut to the request's range."""
        out = dict(options)
        if self.person_id is not None:
            out["person_id"] = self.person_id
        if self.chat_id is not None:
            out["chat_id"] = self.chat_id
        if self.since is not None:
            out["since"] = max(self.since, out.get("since") or self.since)
        if self.until is not None:
            out["until"] = min(self.until, out.get("until") or self.until)
        return out


def _ask_days(rt: Runtime, req: AskRequest, tz: ZoneInfo) -> tuple[date | None, date | None]:
    """`ask --since/--until` read as `search` reads them: the local days."""
    return span_days(req.since, req.until, tz, locale=rt.cfg.locale)


def _ask_scope(
    store: Store, req: AskRequest, tz: ZoneInfo, days: tuple[date | None, date | None]
) -> AskScope:
    """The scope: the days as UTC bounds, `--person/--chat` resolved as `search` resolves them
    (one chat, else an error)."""
    since, until = days_to_utc(*days, tz)
    person_id = store.resolve_person(req.person).id if req.person else None
    chat_id = store.resolve_chat(req.chat).id if req.chat else None
    return AskScope(since, until, person_id, chat_id)


def remote_notice(server: str) -> str:
    """The line every answer through a remote model server starts with."""
    host = urlsplit(server).hostname or server
    return (
        f"this question and the messages found for it are sent to {host} "
        "(not this machine; allow_remote_llm = true)"
    )


def _say_if_behind(rt: Runtime, store: Store, question: str, emit: Emit) -> None:
    """A question about today while chat.db holds messages the index does not have yet: say
    so before answering (a few ms: chat.db is read only for such questions). When chat.db
    can't be read here, nothing is said: the answer is what the index has."""
    from casper.app.freshness import about_today, behind_notice, measure

    tz = zone(rt)
    if not about_today(question, tz, locale=rt.cfg.locale):
        return
    try:
        fresh = measure(rt.cfg, store)
    except (IngestError, sqlite3.Error):
        return
    if fresh.behind:
        emit(behind_notice(fresh, tz))
