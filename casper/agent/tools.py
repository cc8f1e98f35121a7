"""The five tools the model may call, and `Toolbox.call`, which never raises.

Each tool validates its arguments with a small frozen dataclass, runs against the store or the
retriever, and returns compact text (the agent core caps it for small-model context). What
people wrote (message bodies, senders' and groups' names) is quoted and framed as data
(casper.agent.quoting): no message can add a line, a citation, a tag or a tool call of its own.
Imports: casper.store, casper.store.stats_query, casper.protocols, casper.errors, casper.dates.zones
(no backends, no cli).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any, Protocol

from casper.agent.quoting import frame, message_line, quote
from casper.dates.ranges import date_range
from casper.dates.zones import iso
from casper.errors import AmbiguousPerson, CasperError
from casper.protocols import Hit, ToolCall, ToolResult, ToolSpec
from casper.records import ME, Person, StoredMessage
from casper.store.db import Store
from casper.store.stats_query import message_volume, person_stats, top_people

log = logging.getLogger(__name__)

SearchFn = Callable[..., Sequence[Hit]]
DATE = {"type": "string", "description": "YYYY-MM-DD (inclusive)"}

SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search_messages",
        "Search the user's text messages by meaning and keywords. Returns matching conversation "
        "snippets with message ids [#id], dates and senders.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for, in plain words"},
                "person": {
                    "type": "string",
                    "description": "only chats with this contact (name or id)",
                },
                "start_date": DATE,
                "end_date": DATE,
                "limit": {"type": "integer", "description": "max results (1-10)", "default": 5},
            },
            "required": ["query"],
        },
    ),
    ToolSpec(
        "list_contacts",
        "List the user's contacts with message counts, optionally filtered by name.",
        {
            "type": "object",
            "properties": {
                "name_like": {"type": "string", "description": "part of a name"},
                "limit": {"type": "integer", "default": 20},
            },
            "required": [],
        },
    ),
    ToolSpec(
        "get_contact_stats",
        "Message statistics with one contact: counts sent/received, first/last message, active "
        "days, reply times, who starts conversations, top emoji, busiest hours.",
        {
            "type": "object",
            "properties": {
                "person": {"type": "string", "description": "contact name or id"},
                "start_date": DATE,
                "end_date": DATE,
            },
            "required": ["person"],
        },
    ),
    ToolSpec(
        "get_conversation_context",
        "Show the messages around one message id, to read the whole exchange.",
        {
            "type": "object",
            "properties": {
                "message_id": {"type": "string", "description": "a message id like 1234"},
                "before": {"type": "integer", "default": 5},
                "after": {"type": "integer", "default": 5},
            },
            "required": ["message_id"],
        },
    ),
    ToolSpec(
        "get_message_volume_by_period",
        "Count messages per day/week/month/year and rank contacts by how much the user texted "
        "them. Use for 'who did I talk to most', 'how often', 'when did we talk most'.",
        {
            "type": "object",
            "properties": {
                "start_date": DATE,
                "end_date": DATE,
                "person": {"type": "string", "description": "only this contact"},
                "period": {
                    "type": "string",
                    "enum": ["day", "week", "month", "year"],
                    "default": "month",
                },
                "top_n": {"type": "integer", "default": 5},
            },
            "required": ["start_date", "end_date"],
        },
    ),
)


class ArgError(ValueError):
    """The model passed arguments a tool can't use."""


def _opt_str(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str | int | float):
        raise ArgError(f"{key} must be a string")
    return str(value)


def _int(args: Mapping[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = args.get(key, default)
    try:
        return max(lo, min(hi, int(value if value not in (None, "") else default)))
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: 1e309 reads as inf
        raise ArgError(f"{key} must be an integer") from exc


@dataclass(frozen=True, slots=True)
class SearchArgs:
    query: str
    person: str | None = None
    start_date: str | None = None
    end_date: str | None = None
    limit: int = 5

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> SearchArgs:
        query = _opt_str(args, "query")
        if not query:
            raise ArgError("query is required")
        return cls(
            query,
            _opt_str(args, "person"),
            _opt_str(args, "start_date"),
            _opt_str(args, "end_date"),
            _int(args, "limit", 5, 1, 10),
        )


@dataclass(frozen=True, slots=True)
class ListArgs:
    name_like: str | None = None
    limit: int = 20

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> ListArgs:
        return cls(_opt_str(args, "name_like"), _int(args, "limit", 20, 1, 100))


@dataclass(frozen=True, slots=True)
class StatsArgs:
    person: str
    start_date: str | None = None
    end_date: str | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> StatsArgs:
        person = _opt_str(args, "person")
        if not person:
            raise ArgError("person is required")
        return cls(person, _opt_str(args, "start_date"), _opt_str(args, "end_date"))


@dataclass(frozen=True, slots=True)
class ContextArgs:
    message_id: str
    before: int = 5
    after: int = 5

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> ContextArgs:
        ref = _opt_str(args, "message_id")
        if not ref:
            raise ArgError("message_id is required")
        return cls(ref.lstrip("#"), _int(args, "before", 5, 0, 20), _int(args, "after", 5, 0, 20))


@dataclass(frozen=True, slots=True)
class VolumeArgs:
    start_date: str
    end_date: str
    person: str | None = None
    period: str = "month"
    top_n: int = 5

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> VolumeArgs:
        start, end = _opt_str(args, "start_date"), _opt_str(args, "end_date")
        if not start or not end:
            raise ArgError("start_date and end_date are required")
        period = _opt_str(args, "period") or "month"
        if period not in ("day", "week", "month", "year"):
            raise ArgError("period must be day, week, month or year")
        return cls(start, end, _opt_str(args, "person"), period, _int(args, "top_n", 5, 1, 20))


class ToolArgs(Protocol):
    """A tool's arguments, checked and converted from the model's JSON object."""

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> ToolArgs: ...


ARG_TYPES: dict[str, type[ToolArgs]] = {
    "search_messages": SearchArgs,
    "list_contacts": ListArgs,
    "get_contact_stats": StatsArgs,
    "get_conversation_context": ContextArgs,
    "get_message_volume_by_period": VolumeArgs,
}


class Toolbox:
    """The tools over one store and one search function. `call` never raises."""

    specs: tuple[ToolSpec, ...] = SPECS

    def __init__(
        self,
        store: Store,
        search: SearchFn,
        tz: tzinfo,
        *,
        now: datetime | None = None,
        me_names: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.search = search
        self.tz = tz
        self.now = now
        self.me_names = {n.strip().lower() for n in me_names if n.strip()}

    def call(self, call: ToolCall) -> ToolResult:
        """Run one tool; unknown tools, bad arguments and failures come back as `error: …`."""
        arg_type = ARG_TYPES.get(call.name)
        if arg_type is None:
            known = ", ".join(ARG_TYPES)
            return ToolResult(call, False, f"error: unknown tool {call.name!r}; tools: {known}")
        if not isinstance(call.arguments, Mapping):
            return ToolResult(call, False, "error: arguments must be a JSON object")
        try:
            args = arg_type.from_args(call.arguments)
            text, guids = getattr(self, "_" + call.name)(args)
        except ArgError as exc:
            return ToolResult(call, False, f"error: bad arguments for {call.name}: {exc}")
        except AmbiguousPerson as exc:
            return ToolResult(call, True, f"{exc.message}. Call again with one of these ids.")
        except CasperError as exc:
            return ToolResult(call, False, f"error: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - a tool failure is data for the model
            log.warning("tool %s failed: %s", call.name, type(exc).__name__)
            return ToolResult(call, False, f"error: {call.name} failed ({type(exc).__name__})")
        # uncapped: the agent core is the one place results are cut to the model's budget
        return ToolResult(call, True, text, tuple(guids))

    # ---- helpers -----------------------------------------------------------------------
    def _person(self, ref: str) -> Person:
        if self._is_owner(ref):
            raise CasperError(f"{ref} is the user (me), not a contact; name the other person")
        return self.store.resolve_person(ref)

    def _is_owner(self, ref: str) -> bool:
        """The owner's own name (`me_names`) or "me": they are in every chat, so not a filter."""
        return ref.strip().lower() in self.me_names | {"me", "myself", "i"}

    def _range(self, start: str | None, end: str | None) -> tuple[float | None, float | None]:
        return date_range(start, end, self.tz, self.now)

    def _when(self, ts: float) -> str:
        return (iso(ts, self.tz) or "")[:16].replace("T", " ")

    def _line(self, m: StoredMessage, names: Mapping[str, str]) -> str:
        who = "me" if m.sender == ME else names.get(m.sender, m.sender)
        return message_line(m.rowid, self._when(m.ts), who, m.text)

    # ---- the tools ---------------------------------------------------------------------
    def _search_messages(self, a: SearchArgs) -> tuple[str, list[str]]:
        owner = a.person is not None and self._is_owner(a.person)
        person_id = self._person(a.person).id if a.person and not owner else None
        start, end = self._range(a.start_date, a.end_date)
        hits = self.search(a.query, person_id=person_id, since=start, until=end, k=a.limit)
        if not hits:
            return "no matching messages", []
        blocks: list[str] = []
        guids: list[str] = []
        for hit in hits:
            lines = [f"{quote(hit.chat)} ({(iso(hit.start, self.tz) or '')[:10]}):"]
            for m in hit.messages:
                if m.guid in guids:  # overlapping windows: show each message once
                    continue
                lines.append(message_line(m.rowid, self._when(m.ts), m.sender, m.text))
                guids.append(m.guid)
            blocks.append("\n".join(lines))
        # what people wrote, between boundary lines a message cannot hold (agent.quoting)
        return frame("\n\n".join(blocks)), guids

    def _list_contacts(self, a: ListArgs) -> tuple[str, list[str]]:
        people = self.store.find_people(a.name_like) if a.name_like else self.store.people()
        rows = []
        for p in people:
            s = self.store.stats(p.id) or {}
            rows.append((s.get("sent", 0) + s.get("received", 0), p, s))
        rows.sort(key=lambda r: (-r[0], r[1].name))
        if not rows:
            return "no contacts match", []
        out = [
            f"{quote(p.name)}{_also(p)} (id {p.id}): {s.get('sent', 0)} sent, "
            f"{s.get('received', 0)} received, last {(iso(s.get('last'), self.tz) or '-')[:10]}"
            for _, p, s in rows[: a.limit]
        ]
        return "\n".join(out), []

    def _get_contact_stats(self, a: StatsArgs) -> tuple[str, list[str]]:
        p = self._person(a.person)
        start, end = self._range(a.start_date, a.end_date)
        s = person_stats(self.store, p.id, self.tz, start, end)
        reply = s["median_reply_s"]
        fmt = lambda v: "n/a" if v is None else f"{v / 60:.0f} min"  # noqa: E731
        lines = [
            f"{quote(p.name)} (id {p.id})"
            + (f", {a.start_date or '…'} to {a.end_date or '…'}" if start or end else ""),
            f"sent by me: {s['sent']}; received from them: {s['received']}",
            f"first: {(iso(s['first'], self.tz) or '-')[:10]}; "
            f"last: {(iso(s['last'], self.tz) or '-')[:10]}",
            f"active days: {s['active_days']}",
            f"median reply: me {fmt(reply['me'])}, them {fmt(reply['them'])}",
            f"conversations started: me {s['initiations']['me']}, them {s['initiations']['them']}",
            "top emoji: " + (" ".join(f"{e}x{n}" for e, n in s["top_emoji"]) or "none"),
            "busiest hours: " + (", ".join(f"{h}h ({n})" for h, n in s["busiest_hours"]) or "none"),
        ]
        return "\n".join(lines), []

    def _get_conversation_context(self, a: ContextArgs) -> tuple[str, list[str]]:
        msg = self.store.message(a.message_id)
        if msg is None:
            raise CasperError(f"no message with id {a.message_id}")
        ctx = self.store.context(msg, a.before, a.after)
        names = self.store.names()
        chat = self.store.chat(msg.chat_id)
        head = f"{quote(chat.name) if chat else 'Unknown chat'}:"
        lines = "\n".join([head, *(self._line(m, names) for m in ctx)])
        return frame(lines), [m.guid for m in ctx]

    def _get_message_volume_by_period(self, a: VolumeArgs) -> tuple[str, list[str]]:
        person_id = self._person(a.person).id if a.person else None
        start, end = self._range(a.start_date, a.end_date)
        buckets = message_volume(
            self.store, self.tz, start, end, period=a.period, person_id=person_id, top_n=a.top_n
        )
        if not buckets:
            return f"no messages between {a.start_date} and {a.end_date}", []
        names = self.store.names()
        lines = [
            f"{key}: " + ", ".join(f"{quote(names.get(p, p))} {n}" for p, n in ranked)
            for key, ranked in buckets.items()
        ]
        if person_id:
            top = [(person_id, sum(n for ranked in buckets.values() for _, n in ranked))]
        else:
            top = top_people(self.store, self.tz, start, end, a.top_n)
        summary = "whole range: " + ", ".join(f"{quote(names.get(p, p))} {n}" for p, n in top)
        return "\n".join([summary, *lines]), []


def _also(p: Person) -> str:
    """ ", also Sammy, Rivera Design": the card's names a question may use besides the display
    name (first and last names are part of it already)."""
    other = [n for n in p.name_forms("nickname", "organization") if n != p.name]
    return f", also {quote(', '.join(other))}" if other else ""
