"""The client-facing commands as functions: a Runtime and arguments → the `--json` document.

The same functions run in the CLI process (`CASPER_SERVICE=0`, `--no-service`) and inside the
background service, so both paths print identical documents by construction. Progress of
`ask` leaves through `emit` as the dict events shared with the renderer and the socket:
`{"event": "step"|"tool"|"tool_done"|"token"|"notice"|"loading", ...}`.

Imports: runtime, use-cases, render; heavy libraries only through them, lazily.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from casper.app.runtime import Runtime
from casper.errors import CasperError

Emit = Callable[[dict[str, Any]], None]
COMMANDS = ("search", "contacts", "stats", "show", "ask")


def _ignore(_event: dict[str, Any]) -> None:
    pass


def _notice(emit: Emit) -> Callable[[str], None]:
    return lambda text: emit({"event": "notice", "text": text})


def zone(rt: Runtime):  # noqa: ANN201
    """The one zone every command uses (casper.dates.zones.local_tz of the config)."""
    from casper.dates.zones import local_tz

    return local_tz(rt.cfg.timezone)


def run(rt: Runtime, cmd: str, args: dict[str, Any], emit: Emit = _ignore) -> Any:
    """Dispatch one request by name; unknown names and arguments are CasperErrors."""
    handler = _HANDLERS.get(cmd)
    if handler is None:
        raise CasperError(f"unknown command {cmd!r}", hint=f"one of {', '.join(COMMANDS)}")
    try:
        return handler(rt, emit=emit, **args)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise CasperError(f"bad arguments for {cmd}: {exc}") from exc
        raise


def search(
    rt: Runtime,
    *,
    query: str,
    person: str | None = None,
    chat: str | None = None,
    since: str | None = None,
    until: str | None = None,
    k: int | None = None,
    mode: str = "hybrid",
    lexical: str | None = None,
    rerank: bool = True,
    literal: bool = False,
    emit: Emit = _ignore,
) -> dict[str, Any]:
    from casper.app.documents import hit_json
    from casper.dates.ranges import date_range

    if mode not in ("hybrid", "bm25", "vector"):
        raise CasperError(f"unknown mode {mode!r}", hint="use hybrid, bm25 or vector")
    if lexical not in (None, "lancedb", "rank-bm25"):
        raise CasperError(f"unknown lexical backend {lexical!r}", hint="use lancedb or rank-bm25")
    tz = zone(rt)
    start, end = date_range(since, until, tz, locale=rt.cfg.locale)  # before opening anything
    store = rt.store()
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
    retriever = rt.retriever(rerank=rerank, lexical=lexical, mode=mode, say=_notice(emit))
    said = len(retriever.notices)
    hits = retriever.search(
        query,
        person_id=person_id,
        chat_id=chat_id,
        since=start,
        until=end,
        k=k,
        mode=mode,
        rerank=rerank,
        literal=literal,
    )
    _say_new(retriever, said, emit)
    understood = retriever.understood
    if understood is not None and understood.rewritten:
        emit({"event": "read_as", "text": understood.summary()})
    filters = {
        "person": person_id,
        "chat": chat_id,
        "since": since,
        "until": until,
        "mode": mode,
        "lexical": lexical or rt.cfg.lexical,
        "rerank": rerank,
    }
    doc: dict[str, Any] = {"query": query, "filters": filters}
    if understood is not None:
        doc["understood"] = understood.to_json()
    return {**doc, "hits": [hit_json(h, tz) for h in hits]}


def contacts(rt: Runtime, *, emit: Emit = _ignore) -> list[dict[str, Any]]:
    from casper.dates.zones import iso

    tz = zone(rt)
    store = rt.store()
    rows = []
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
                "sent": s.get("sent", 0),
                "received": s.get("received", 0),
                "first": iso(s.get("first"), tz),
                "last": iso(s.get("last"), tz),
            }
        )
    rows.sort(key=lambda r: -(r["sent"] + r["received"]))
    return rows


def stats(
    rt: Runtime,
    *,
    person: str,
    since: str | None = None,
    until: str | None = None,
    emit: Emit = _ignore,
) -> dict[str, Any]:
    from casper.app.documents import stats_json
    from casper.dates.ranges import date_range
    from casper.store.stats_query import person_stats

    tz = zone(rt)
    start, end = date_range(since, until, tz, locale=rt.cfg.locale)  # before opening anything
    store = rt.store()
    who = store.resolve_person(person)
    doc = stats_json(who, person_stats(store, who.id, tz, start, end), tz)
    doc["range"] = _days(start, end, tz)  # what "last March" resolved to
    return doc


def _days(start: float | None, end: float | None, tz: Any) -> dict[str, str | None]:
    """{"since": first local day or None, "until": last local day (inclusive) or None}."""
    from datetime import datetime, timedelta

    first = datetime.fromtimestamp(start, tz).date().isoformat() if start is not None else None
    last = (
        (datetime.fromtimestamp(end, tz) - timedelta(days=1)).date().isoformat()
        if end is not None
        else None
    )
    return {"since": first, "until": last}


def show(
    rt: Runtime, *, ref: str, before: int = 5, after: int = 5, emit: Emit = _ignore
) -> dict[str, Any]:
    from casper.app.documents import message_json

    tz = zone(rt)
    store = rt.store()
    msg = store.message(ref)
    if msg is None:
        raise CasperError(f"no message {ref!r}", hint="use a rowid or guid from `casper search`")
    ctx = store.context(msg, before, after)
    names = store.names()
    chat = store.chat(msg.chat_id)
    return {
        "message": message_json(msg, names, tz),
        "context": [message_json(m, names, tz) for m in ctx],
        "chat": {"id": msg.chat_id, "name": chat.name if chat else None},
    }


def ask(
    rt: Runtime,
    *,
    question: str,
    model: str | None = None,
    max_iterations: int | None = None,
    no_llm: bool = False,
    history: list[str] | tuple[str, ...] = (),
    emit: Emit = _ignore,
) -> dict[str, Any]:
    """One question through the agent (or retrieval alone); the model loads once per Runtime."""
    from casper.agent.answer import answer_question
    from casper.agent.core import Limits

    if max_iterations is not None and max_iterations < 1:
        raise CasperError(
            f"--max-iterations must be at least 1 (got {max_iterations})",
            hint="each iteration is one model call; the default is 5",
        )
    tz = zone(rt)  # the zone `index`, `stats` and `search` use too
    store = rt.store()
    retriever = rt.retriever(say=_notice(emit))
    said = len(retriever.notices)
    engine, why = None, None
    loading = time.perf_counter()
    if not no_llm:
        name = model or rt.cfg.llm_model
        if not rt.engine_loaded(name):
            emit({"event": "loading", "what": name})
        engine, failure = rt.engine(name)
        if failure is not None:
            emit({"event": "notice", "text": failure.message, "hint": failure.hint})
            why = "the language model is not available"
    load_s = time.perf_counter() - loading  # ~0 when this Runtime already holds the model
    asked = answer_question(
        question,
        store=store,
        search=retriever.search,
        engine=engine,
        tz=tz,
        limits=Limits(max_iterations=max_iterations or rt.cfg.max_iterations),
        history=tuple(history),
        unavailable_reason=why,
        on_event=EventAdapter(emit),
        locale=rt.cfg.locale,
        me_names=rt.cfg.me_names,
    )
    _say_new(retriever, said, emit)
    asked = dataclasses.replace(
        asked, load_s=round(load_s, 3), elapsed_s=round(asked.elapsed_s + load_s, 3)
    )
    return asked.to_dict()


def _say_new(retriever: Any, said: int, emit: Emit) -> None:
    """Notices the retriever raised during this request (a partly built semantic index, …)."""
    for text in retriever.notices[said:]:
        emit({"event": "notice", "text": text})


class EventAdapter:
    """The agent loop's events → the shared dict shape (dicts pass through unchanged)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._started: float | None = None

    def __call__(self, event: Any) -> None:
        if isinstance(event, dict):
            self.emit(event)
            return
        from casper.agent import loop

        if isinstance(event, loop.Thinking):
            self.emit({"event": "step", "iteration": event.iteration})
        elif isinstance(event, loop.ToolStarted):
            self._started = time.perf_counter()
            self.emit(
                {
                    "event": "tool",
                    "name": event.call.name,
                    "arguments": dict(event.call.arguments),
                }
            )
        elif isinstance(event, loop.ToolFinished):
            elapsed = time.perf_counter() - self._started if self._started else 0.0
            self.emit(
                {
                    "event": "tool_done",
                    "name": event.result.call.name,
                    "ok": event.result.ok,
                    "elapsed_s": round(elapsed, 3),
                    "found": len(event.result.message_guids),
                    "summary": "" if event.result.ok else event.result.text[:80],
                }
            )
        elif isinstance(event, loop.Answering):
            self.emit({"event": "answering"})
        elif isinstance(event, loop.Token):
            self.emit({"event": "token", "text": event.text})


_HANDLERS: dict[str, Callable[..., Any]] = {
    "search": search,
    "contacts": contacts,
    "stats": stats,
    "show": show,
    "ask": ask,
}
