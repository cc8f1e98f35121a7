"""The five tools the model may call, and `Toolbox.call`, which never raises.

Each tool is declared once, where it is written: its arguments as a frozen dataclass whose field
types and `Arg`s are its JSON Schema and its checks (casper.agent.tool_args), and its run
function under `@tool(name, description, Args, shows_messages=...)`, which registers it in
`TOOLS`. Everything else is read from there: the specs the model and MCP clients are shown, the
reading of the model's arguments, the dispatch, and which results the privacy ceiling withholds
under `aggregate` (casper.agent.ceiling: the tools that show messages).

A tool runs against the store or the retriever and returns compact text (the agent core caps it
for small-model context). What people wrote (message bodies, senders' and groups' names) is
quoted and framed as data (casper.agent.quoting): no message can add a line, a citation, a tag
or a tool call of its own.
Imports: casper.agent (quoting, tool_args), casper.store, casper.store.stats_query,
casper.protocols, casper.errors, casper.dates (no backends, no cli).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Annotated, TypeVar

from casper.agent.quoting import frame, message_line
from casper.agent.redact import FULL, Ceiling
from casper.agent.tool_args import Arg, ArgError, Arguments, read, schema
from casper.dates.ranges import date_range
from casper.dates.zones import iso
from casper.errors import AmbiguousPerson, CasperError
from casper.protocols import Hit, ToolCall, ToolResult, ToolSpec
from casper.records import ME, Person, StoredMessage
from casper.store.db import Store
from casper.store.stats_query import message_volume, person_stats, top_people
from casper.vocab import Period

log = logging.getLogger(__name__)

SearchFn = Callable[..., Sequence[Hit]]
Shown = tuple[str, list[str]]  # a tool's text, and the guids of the messages it shows
A = TypeVar("A")
DATE = Arg("YYYY-MM-DD (inclusive)")


@dataclass(frozen=True, slots=True)
class Tool:
    """One registered tool: what the model is shown, and the call that reads and runs it."""

    spec: ToolSpec
    args: type  # the dataclass its arguments are read into (casper.agent.tool_args)
    run: Callable[[Toolbox, Arguments], Shown]  # reads `args` (ArgError), then runs
    shows_messages: bool  # its text holds message bodies: withheld under `aggregate`


TOOLS: dict[str, Tool] = {}  # by name, in the order the model is shown them


def tool(
    name: str, description: str, args: type[A], *, shows_messages: bool
) -> Callable[[Callable[[Toolbox, A], Shown]], Callable[[Toolbox, A], Shown]]:
    """Register the decorated function as the tool `name`, taking the dataclass `args`.
    `shows_messages` has no default: each tool says whether `aggregate` must withhold it."""

    def register(fn: Callable[[Toolbox, A], Shown]) -> Callable[[Toolbox, A], Shown]:
        if name in TOOLS:
            raise ValueError(f"tool {name!r} is declared twice")
        spec = ToolSpec(name, description, schema(args))
        TOOLS[name] = Tool(
            spec, args, lambda box, given: fn(box, read(args, given)), shows_messages
        )
        return fn

    return register


def shows_messages(name: str) -> bool:
    """Whether the tool `name`'s results hold message bodies (an unknown tool's hold none)."""
    found = TOOLS.get(name)
    return found is not None and found.shows_messages


class Toolbox:
    """The tools over one store and one search function. `call` never raises."""

    def __init__(
        self,
        store: Store,
        search: SearchFn,
        tz: tzinfo,
        *,
        now: datetime | None = None,
        me_names: Sequence[str] = (),
        ceiling: Ceiling = FULL,
    ) -> None:
        self.store = store
        self.search = search
        self.tz = tz
        self.now = now
        self.me_names = {n.strip().lower() for n in me_names if n.strip()}
        # what people wrote passes `field` (quoted, masked as the ceiling says) before it is
        # framed, so the tool's own ids, dates and counts are never in what is masked
        self.ceiling = ceiling
        self.field = ceiling.field
        self.tools = dict(TOOLS)
        self.specs: tuple[ToolSpec, ...] = tuple(t.spec for t in self.tools.values())

    def call(self, call: ToolCall) -> ToolResult:
        """Run one tool; unknown tools, bad arguments and failures come back as `error: …`."""
        found = self.tools.get(call.name)
        if found is None:
            known = ", ".join(self.tools)
            return ToolResult(call, False, f"error: unknown tool {call.name!r}; tools: {known}")
        if not isinstance(call.arguments, Mapping):
            return ToolResult(call, False, "error: arguments must be a JSON object")
        try:
            text, guids = found.run(self, call.arguments)
        except ArgError as exc:
            return ToolResult(call, False, self.ceiling.shown(f"error: bad arguments for "
                                                             f"{call.name}: {exc}"))  # fmt: skip
        except AmbiguousPerson as exc:  # it names the people: through the gate, as errors are
            text = self.ceiling.shown(f"{exc.message}. Call again with one of these ids.")
            return ToolResult(call, True, text)
        except CasperError as exc:
            return ToolResult(call, False, self.ceiling.shown(f"error: {exc.message}"))
        except Exception as exc:  # noqa: BLE001 - a tool failure is data for the model
            log.warning("tool %s failed: %s", call.name, type(exc).__name__)
            return ToolResult(call, False, f"error: {call.name} failed ({type(exc).__name__})")
        # uncapped: the agent core is the one place results are cut to the model's budget
        return ToolResult(call, True, text, tuple(guids))

    # ---- what the tools share ----------------------------------------------------------
    def person(self, ref: str) -> Person:
        if self.is_owner(ref):
            raise CasperError(f"{ref} is the user (me), not a contact; name the other person")
        return self.store.resolve_person(ref)

    def is_owner(self, ref: str) -> bool:
        """The owner's own name (`me_names`) or "me": they are in every chat, so not a filter."""
        return ref.strip().lower() in self.me_names | {"me", "myself", "i"}

    def span(self, start: str | None, end: str | None) -> tuple[float | None, float | None]:
        return date_range(start, end, self.tz, self.now)

    def when(self, ts: float) -> str:
        return (iso(ts, self.tz) or "")[:16].replace("T", " ")

    def line(self, m: StoredMessage, names: Mapping[str, str]) -> str:
        who = "me" if m.sender == ME else names.get(m.sender, m.sender)
        return message_line(m.rowid, self.when(m.ts), who, m.text, self.field)

    def limited(self, ceiling: Ceiling) -> Toolbox:
        """The same tools over the same store and search, shown through `ceiling`."""
        owner = tuple(self.me_names)
        return Toolbox(self.store, self.search, self.tz, now=self.now, me_names=owner,
                       ceiling=ceiling)  # fmt: skip


# ---- the tools, in the order the model is shown them ---------------------------------------
@dataclass(frozen=True, slots=True)
class SearchArgs:
    query: Annotated[str, Arg("what to look for, in plain words")]
    person: Annotated[str | None, Arg("only chats with this contact (name or id)")] = None
    start_date: Annotated[str | None, DATE] = None
    end_date: Annotated[str | None, DATE] = None
    limit: Annotated[int, Arg("max results (1-10)", bounds=(1, 10))] = 5


@tool(
    "search_messages",
    "Search the user's text messages by meaning and keywords. Returns matching conversation "
    "snippets with message ids [#id], dates and senders.",
    SearchArgs,
    shows_messages=True,
)
def search_messages(box: Toolbox, a: SearchArgs) -> Shown:
    owner = a.person is not None and box.is_owner(a.person)
    person_id = box.person(a.person).id if a.person and not owner else None
    start, end = box.span(a.start_date, a.end_date)
    hits = box.search(a.query, person_id=person_id, since=start, until=end, k=a.limit)
    if not hits:
        return "no matching messages", []
    blocks: list[str] = []
    guids: list[str] = []
    for hit in hits:
        lines = [f"{box.field(hit.chat)} ({(iso(hit.start, box.tz) or '')[:10]}):"]
        for m in hit.messages:
            if m.guid in guids:  # overlapping windows: show each message once
                continue
            lines.append(message_line(m.rowid, box.when(m.ts), m.sender, m.text, box.field))
            guids.append(m.guid)
        blocks.append("\n".join(lines))
    # what people wrote, between boundary lines a message cannot hold (agent.quoting)
    return frame("\n\n".join(blocks)), guids


@dataclass(frozen=True, slots=True)
class ListArgs:
    name_like: Annotated[str | None, Arg("part of a name")] = None
    limit: Annotated[int, Arg(bounds=(1, 100))] = 20


@tool(
    "list_contacts",
    "List the user's contacts with message counts, optionally filtered by name.",
    ListArgs,
    shows_messages=False,
)
def list_contacts(box: Toolbox, a: ListArgs) -> Shown:
    people = box.store.find_people(a.name_like) if a.name_like else box.store.people()
    rows = []
    for p in people:
        s = box.store.stats(p.id) or {}
        rows.append((s.get("sent", 0) + s.get("received", 0), p, s))
    rows.sort(key=lambda r: (-r[0], r[1].name))
    if not rows:
        return "no contacts match", []
    out = [
        f"{box.field(p.name)}{_also(box, p)} (id {p.id}): {s.get('sent', 0)} sent, "
        f"{s.get('received', 0)} received, last {(iso(s.get('last'), box.tz) or '-')[:10]}"
        for _, p, s in rows[: a.limit]
    ]
    return "\n".join(out), []


def _also(box: Toolbox, p: Person) -> str:
    """ ", also Sammy, Rivera Design": the card's names a question may use besides the display
    name (first and last names are part of it already)."""
    other = [n for n in p.name_forms("nickname", "organization") if n != p.name]
    return f", also {box.field(', '.join(other))}" if other else ""


@dataclass(frozen=True, slots=True)
class StatsArgs:
    person: Annotated[str, Arg("contact name or id")]
    start_date: Annotated[str | None, DATE] = None
    end_date: Annotated[str | None, DATE] = None


@tool(
    "get_contact_stats",
    "Message statistics with one contact: counts sent/received, first/last message, active "
    "days, reply times, who starts conversations, top emoji, busiest hours.",
    StatsArgs,
    shows_messages=False,
)
def get_contact_stats(box: Toolbox, a: StatsArgs) -> Shown:
    p = box.person(a.person)
    start, end = box.span(a.start_date, a.end_date)
    s = person_stats(box.store, p.id, box.tz, start, end)
    reply = s["median_reply_s"]
    fmt = lambda v: "n/a" if v is None else f"{v / 60:.0f} min"  # noqa: E731
    lines = [
        f"{box.field(p.name)} (id {p.id})"
        + (f", {a.start_date or '…'} to {a.end_date or '…'}" if start or end else ""),
        f"sent by me: {s['sent']}; received from them: {s['received']}",
        f"first: {(iso(s['first'], box.tz) or '-')[:10]}; "
        f"last: {(iso(s['last'], box.tz) or '-')[:10]}",
        f"active days: {s['active_days']}",
        f"median reply: me {fmt(reply['me'])}, them {fmt(reply['them'])}",
        f"conversations started: me {s['initiations']['me']}, them {s['initiations']['them']}",
        "top emoji: " + (" ".join(f"{e}x{n}" for e, n in s["top_emoji"]) or "none"),
        "busiest hours: " + (", ".join(f"{h}h ({n})" for h, n in s["busiest_hours"]) or "none"),
    ]
    return "\n".join(lines), []


@dataclass(frozen=True, slots=True)
class ContextArgs:
    # models copy the `[#id]` marker: "#1234" is message 1234
    message_id: Annotated[str, Arg("a message id like 1234", lstrip="#", integer_too=True)]
    before: Annotated[int, Arg(bounds=(0, 20))] = 5
    after: Annotated[int, Arg(bounds=(0, 20))] = 5


@tool(
    "get_conversation_context",
    "Show the messages around one message id, to read the whole exchange.",
    ContextArgs,
    shows_messages=True,
)
def get_conversation_context(box: Toolbox, a: ContextArgs) -> Shown:
    msg = box.store.message(a.message_id)
    if msg is None:
        raise CasperError(f"no message with id {a.message_id}")
    ctx = box.store.context(msg, a.before, a.after)
    names = box.store.names()
    chat = box.store.chat(msg.chat_id)
    head = f"{box.field(chat.name) if chat else 'Unknown chat'}:"
    lines = "\n".join([head, *(box.line(m, names) for m in ctx)])
    return frame(lines), [m.guid for m in ctx]


@dataclass(frozen=True, slots=True)
class VolumeArgs:
    # neither date: the whole history; one: from it, or up to it
    start_date: Annotated[str | None, DATE] = None
    end_date: Annotated[str | None, DATE] = None
    person: Annotated[str | None, Arg("only this contact")] = None
    period: Period = "month"
    top_n: Annotated[int, Arg(bounds=(1, 20))] = 5


@tool(
    "get_message_volume_by_period",
    "Count messages per day/week/month/year and rank contacts by how much the user texted "
    "them. Use for 'who did I talk to most', 'how often', 'when did we talk most'. Without "
    "dates: the whole history.",
    VolumeArgs,
    shows_messages=False,
)
def get_message_volume_by_period(box: Toolbox, a: VolumeArgs) -> Shown:
    person_id = box.person(a.person).id if a.person else None
    start, end = box.span(a.start_date, a.end_date)
    buckets = message_volume(
        box.store, box.tz, start, end, period=a.period, person_id=person_id, top_n=a.top_n
    )
    if not buckets:
        return f"no messages {_between(a.start_date, a.end_date)}", []
    names = box.store.names()
    lines = [
        f"{key}: " + ", ".join(f"{box.field(names.get(p, p))} {n}" for p, n in ranked)
        for key, ranked in buckets.items()
    ]
    if person_id:
        top = [(person_id, sum(n for ranked in buckets.values() for _, n in ranked))]
    else:
        top = top_people(box.store, box.tz, start, end, a.top_n)
    summary = "whole range: " + ", ".join(f"{box.field(names.get(p, p))} {n}" for p, n in top)
    return "\n".join([summary, *lines]), []


def _between(start: str | None, end: str | None) -> str:
    if start and end:
        return f"between {start} and {end}"
    return f"since {start}" if start else f"until {end}" if end else "at all"


SPECS: tuple[ToolSpec, ...] = tuple(t.spec for t in TOOLS.values())  # the five, as a value
