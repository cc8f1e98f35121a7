"""The client-facing commands as functions: a Runtime and arguments → the `--json` document.

The same functions run in the CLI process (`CASPER_SERVICE=0`, `--no-service`) and inside the
background service, so both paths print identical documents by construction. Progress of
`ask` leaves through `emit` as the dict events shared with the renderer and the socket:
`{"event": "step"|"tool"|"tool_done"|"token"|"notice"|"loading", ...}`. Arguments are checked
once, by casper.app.requests, before a handler runs.

Imports: requests, runtime, use-cases, documents; heavy libraries only through them, lazily.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

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
from casper.dates.zones import iso
from casper.errors import CasperError

if TYPE_CHECKING:
    from datetime import date, tzinfo
    from zoneinfo import ZoneInfo

    from casper.agent.answer import Asked
    from casper.app.documents import (
        AskDoc,
        AskFilters,
        ContactJson,
        ReactionAsked,
        Reranked,
        SearchDoc,
        SearchFilters,
        ShowDoc,
        StatsDoc,
    )
    from casper.protocols import Hit
    from casper.search.retriever import SearchResult
    from casper.store.db import Store

Emit = Callable[[dict[str, Any]], None]
# what `--json` prints (casper.app.documents; a tool call's is casper.app.tool_calls')
Document: TypeAlias = "SearchDoc | list[ContactJson] | StatsDoc | ShowDoc | AskDoc | dict[str, Any]"


def _ignore(_event: dict[str, Any]) -> None:
    pass


def _notice(emit: Emit, key: str | None = None) -> Callable[[str], None]:
    """A `say` for notices; `key` names the kind (a view that says it another way skips it)."""
    extra = {"key": key} if key else {}
    return lambda text: emit({"event": "notice", "text": text, **extra})


def zone(rt: Runtime) -> ZoneInfo:
    """The one zone every command uses (casper.dates.zones.local_tz of the config)."""
    from casper.dates.zones import local_tz

    return local_tz(rt.cfg.timezone)


def run(rt: Runtime, cmd: str, args: dict[str, Any], emit: Emit = _ignore) -> Document:
    """Check one request (casper.app.requests: the one place arguments are validated, for
    both transports) and answer it; a bad command or argument is a CasperError with a hint."""
    return answer(rt, parse(cmd, args), emit)


def answer(rt: Runtime, request: Request, emit: Emit = _ignore) -> Document:
    """Answer a checked request."""
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
    for notice in result.notices:
        if rt.first_time(notice.key):
            emit({"event": "notice", "text": notice.text})


def search(rt: Runtime, req: SearchRequest, emit: Emit = _ignore) -> SearchDoc:
    from casper.app.coverage import coverage_days, nothing_then
    from casper.app.documents import hit_json
    from casper.dates.ranges import days_to_utc, span_days

    tz = zone(rt)
    days = span_days(req.since, req.until, tz, locale=rt.cfg.locale)  # read once, before opening
    start, end = days_to_utc(*days, tz)
    store = rt.store()
    person_id = store.resolve_person(req.person).id if req.person else None
    chat_id = None
    if req.chat:
        chat_id = one_chat(store, req.chat)
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
            emit({"event": "notice", "text": said})
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
    from casper.app.optional_models import not_reranked_because

    return {"reranked": False, "why_not_reranked": not_reranked_because(rt.cfg, asked)}


def contacts(rt: Runtime, emit: Emit = _ignore) -> list[ContactJson]:
    tz = zone(rt)
    store = rt.store()
    from casper.store.stats_query import sent_in_groups

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


def stats(rt: Runtime, req: StatsRequest, emit: Emit = _ignore) -> StatsDoc:
    from casper.app.stats_scope import resolve_scope, stats_document
    from casper.dates.ranges import span_days

    tz = zone(rt)
    span = span_days(req.since, req.until, tz, locale=rt.cfg.locale)  # before opening
    store = rt.store()
    scope = resolve_scope(store, req.person, req.chat)
    _say_if_outside(store, span, tz, emit)
    doc = stats_document(store, scope, tz, span, period=req.period)
    if scope.person is not None:
        from casper.dates.ranges import days_to_utc
        from casper.store.stats_query import chat_split

        # a person's `sent` is one-to-one, `received` everywhere: both, apart
        doc["chats"] = chat_split(store, scope.person.id, *days_to_utc(*span, tz))
    return doc


def _say_if_outside(
    store: Store, days: tuple[date | None, date | None], tz: tzinfo, emit: Emit
) -> None:
    """Zeros for "last March" on a history that ended before it are no finding: say the days
    and what the history covers, as `search` does."""
    from casper.app.coverage import coverage_days, outside

    said = outside(days, coverage_days(*store.coverage(), tz))
    if said:
        emit({"event": "notice", "text": said})


def show(rt: Runtime, req: ShowRequest, emit: Emit = _ignore) -> ShowDoc:
    from casper.app.documents import message_json

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
                emit({"event": "notice",
                      "text": f"{req.ref} is {who} {label} reaction to #{msg.rowid}; "
                              f"showing #{msg.rowid}"})  # fmt: skip
    if msg is None:
        raise CasperError(
            f"no message {req.ref!r}", hint="use a rowid or guid from `casper search`"
        )
    ctx = store.context(msg, req.before, req.after)
    chat = store.chat(msg.chat_id)
    doc: ShowDoc = {
        "message": message_json(msg, names, tz),
        "context": [message_json(m, names, tz) for m in ctx],
        "chat": {"id": msg.chat_id, "name": chat.name if chat else None},
    }
    if asked is not None:
        doc["reaction"] = asked  # what was asked for: a reaction to `message`
    return doc


def _reaction_at(rt: Runtime, store: Store, ref: str) -> tuple[str, str, str, str] | None:
    """(target guid, sender, label, the reaction's guid) when `ref` (a rowid or guid) is a
    tapback: reactions are folded into their message, so their rows are not messages. A rowid
    is looked up in chat.db (read-only); None when it can't be read or it is no reaction."""
    import sqlite3

    from ingest.errors import IngestError

    text = str(ref).strip().lstrip("#")
    guid: str | None = text
    if text.isdigit():
        from ingest.connect import open_chat_db

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


def ask(rt: Runtime, req: AskRequest, emit: Emit = _ignore) -> AskDoc:
    """One question through the agent (or retrieval alone); the model loads once per Runtime.

    With a model server (`base_url`, or the setting `llm_base_url`) its host is checked before
    anything else (a remote one is refused unless `allow_remote_llm`, and then said on every
    answer); a server that fails mid-answer leaves the answer to search alone, said in a
    notice."""
    from casper.agent.answer import answer_question
    from casper.agent.core import Limits
    from casper.app.optional_models import engine_loaded, engine_unavailable
    from casper.config import llm_server
    from casper.errors import ModelServerFailed

    server = None if req.no_llm else (req.base_url or rt.cfg.llm_base_url)
    privacy = "full"  # a model on this machine reads what the owner reads
    if server is not None:
        server, local = llm_server(server, allow_remote=rt.cfg.allow_remote_llm)
        if not local:
            privacy = rt.cfg.privacy  # another machine's model: the same ceiling as MCP
            limited = "" if privacy == "full" else f"; what the tools show it: privacy {privacy}"
            emit({"event": "notice", "text": remote_notice(server) + limited})
    tz = zone(rt)  # the zone `index`, `stats` and `search` use too
    scope = _ask_scope(rt, req, tz)  # --since/--until read before anything opens, as search
    store = rt.store()
    scope = _ask_people(store, req, scope)
    retriever = rt.retriever()
    reranker = rt.reranker(_notice(emit, "reranker"))
    through = store.indexed_through()  # before searching: the answer sees at least this much
    _say_if_behind(rt, store, req.question, emit)

    ran: dict[str, Any] = {"searches": 0, "reranked": False, "absent": {}, "words": {},
                           "held": set()}  # fmt: skip

    def search(query: str, **options: Any) -> list[Hit]:
        """The agent's search: this request's reranker, notices said as they come; what ran
        is noted for the document (reranked or not, the question's words in no message)."""
        result = retriever.search(query, reranker=reranker, **_within(scope, options))
        _say_notices(rt, result, emit)
        ran["searches"] += 1
        ran["reranked"] = ran["reranked"] or result.reranked
        if query.strip() == req.question:  # the question's own words, as searched
            from casper.search.words import matched

            ran["absent"].update(dict.fromkeys(result.words_not_found))
            ran["words"].update(dict.fromkeys(result.words))
            texts = [m.text for h in result.hits for m in h.messages]
            ran["held"].update(matched(result.words, texts))
        return result.hits

    engine = None
    loading = time.perf_counter()
    if not req.no_llm:
        name = req.model or rt.cfg.llm_model
        if not rt.engine_loaded(name, server):
            emit({"event": "loading", "what": engine_key(name, server)})
        engine, failure = rt.engine(name, server)
        if failure is not None:
            # one line, once per data dir until something changes; `casper doctor` has it all
            said = engine_unavailable(rt.cfg, name, failure)
            if said:
                emit({"event": "notice", "text": said})
        elif server is None:
            engine_loaded(rt.cfg, name)
    load_s = time.perf_counter() - loading  # ~0 when this Runtime already holds the model

    def answer(engine: Any) -> Asked:
        return answer_question(
            req.question,
            store=store,
            search=search,
            engine=engine,
            tz=tz,
            limits=Limits(max_iterations=req.max_iterations or rt.cfg.max_iterations),
            history=req.history,
            on_event=emit,  # the loop's events are already the shared dicts
            locale=rt.cfg.locale,
            me_names=me_names(rt.cfg, store),
            no_llm=req.no_llm,
            privacy=privacy if engine is not None else "full",
        )

    answering = time.perf_counter()
    try:
        asked = answer(engine)
    except ModelServerFailed as exc:  # every time: a server's failure is of the moment
        emit({"event": "notice", "text": f"answering from search alone: {exc.message}",
              "hint": exc.hint})  # fmt: skip
        asked = answer(None)
    elapsed = time.perf_counter() - answering + load_s  # a failed attempt's wait included
    asked = dataclasses.replace(asked, load_s=round(load_s, 3), elapsed_s=round(elapsed, 3))
    if (
        asked.grounding == "search_only"
        and ran["words"]
        and set(ran["words"]) <= set(ran["absent"])
    ):
        # the closest messages to words no message holds: nothing was found
        asked = dataclasses.replace(asked, grounding="nothing_found")
    reranked = ran_json(rt, True, ran["reranked"])
    if not ran["reranked"] and not ran["searches"]:
        reranked["why_not_reranked"] = "no search ran"
    if ran["words"]:  # a word the cited messages hold was found, by whichever search
        from casper.search.words import matched

        cited = [c.get("text") or "" for c in asked.citations]
        ran["held"].update(matched(list(ran["words"]), cited))
    filters: AskFilters = {
        "person": scope.get("person_id"),
        "chat": scope.get("chat_id"),
        "since": req.since,
        "until": req.until,
    }
    if req.since or req.until:
        filters["days"] = scope["days"]
    return {
        **asked.to_dict(),
        **reranked,
        "filters": filters,
        "words_not_found": list(ran["absent"]),
        # in some message, but in none the question's searches found (nor the answer cites)
        "words_not_in_hits": [
            w for w in ran["words"] if w not in ran["held"] and w not in ran["absent"]
        ],  # fmt: skip
        "llm_server": server,
        "indexed_through": iso(through, tz),
    }


def _ask_scope(rt: Runtime, req: AskRequest, tz: Any) -> dict[str, Any]:
    """`ask --since/--until` read as `search` reads them: UTC bounds and the local days."""
    from casper.dates.ranges import days_to_utc, span_days

    days = span_days(req.since, req.until, tz, locale=rt.cfg.locale)
    start, end = days_to_utc(*days, tz)
    return {"since": start, "until": end, "days": [d.isoformat() if d else None for d in days]}


def one_chat(store: Store, query: str) -> int:
    """`--chat` as `search` and `ask` read it: the id of the one chat it names, else an error
    that lists what it matched."""
    found = store.find_chats(query)
    if len(found) != 1:
        names = ", ".join(f"{c.name} ({c.id})" for c in found) or "none"
        raise CasperError(
            f"--chat {query!r} matches {len(found)} chats: {names}",
            hint="pass the chat id (`casper chats` lists them)",
        )
    return found[0].id


def _ask_people(store: Store, req: AskRequest, scope: dict[str, Any]) -> dict[str, Any]:
    """`ask --person/--chat` resolved as `search` resolves them (one chat, else an error)."""
    if req.person:
        scope["person_id"] = store.resolve_person(req.person).id
    if req.chat:
        scope["chat_id"] = one_chat(store, req.chat)
    return scope


def _within(scope: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A search the agent (or the prefetch) asks for, kept inside the request's scope: its
    person and chat, and its dates cut to the request's range."""
    out = dict(options)
    for key in ("person_id", "chat_id"):
        if scope.get(key) is not None:
            out[key] = scope[key]
    if scope.get("since") is not None:
        out["since"] = max(scope["since"], out.get("since") or scope["since"])
    if scope.get("until") is not None:
        out["until"] = min(scope["until"], out.get("until") or scope["until"])
    return out


def remote_notice(server: str) -> str:
    """The line every answer through a remote model server starts with."""
    from urllib.parse import urlsplit

    host = urlsplit(server).hostname or server
    return (
        f"this question and the messages found for it are sent to {host} "
        "(not this machine; allow_remote_llm = true)"
    )


def _say_if_behind(rt: Runtime, store: Store, question: str, emit: Emit) -> None:
    """A question about today while chat.db holds messages the index does not have yet: say
    so before answering (a few ms: chat.db is read only for such questions). When chat.db
    can't be read here, nothing is said: the answer is what the index has."""
    import sqlite3

    from casper.app.freshness import about_today, behind_notice, measure
    from ingest.errors import IngestError

    tz = zone(rt)
    if not about_today(question, tz, locale=rt.cfg.locale):
        return
    try:
        fresh = measure(rt.cfg, store)
    except (IngestError, sqlite3.Error):
        return
    if fresh.behind:
        emit(behind_notice(fresh, tz))
