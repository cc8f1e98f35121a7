"""The `--json` documents from CLI.md: their types, and builders from the store's records.

Each command's document is a TypedDict here, so mypy holds the handlers that build them and the
terminal views in casper.cli that read them (which import these types for checking only) to the
same keys; tests/integration/test_json_types.py holds each command's printed `--json` to its
type. `NotRequired`: a key only some documents have. The blocks made below the app layer are
typed where they are made (`PersonStats` in casper.stats, `UnderstoodJson` in
casper.search.query) and imported here for checking only, so importing this module stays cheap;
`AskDoc` extends the agent's `Answer` (casper.agent.answer_json, stdlib only), so the answer's
keys are declared once.

Imports: stdlib, casper.protocols, casper.records, casper.dates.zones, casper.search.words,
casper.agent.answer_json; for types only, casper.stats, casper.search.query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING, NotRequired, TypeAlias, TypedDict, cast

from casper.agent.answer_json import Answer, Citation
from casper.dates.zones import iso
from casper.protocols import Hit
from casper.records import Person, StoredMessage
from casper.stats import ChatSplit

if TYPE_CHECKING:
    from casper.app.stats_series import Series
    from casper.indexer.run import IndexRunReport, Placed
    from casper.protocols import JSONValue
    from casper.search.query import UnderstoodJson
    from casper.stats import PersonStats

# inside: the thin `--json` path loads this module, not search.words or indexer.run


class Span(TypedDict):
    """First and last: ISO timestamps (or days), None when there is nothing."""

    first: str | None
    last: str | None


class Covered(TypedDict):
    """The first and last local day (ISO) the history covers."""

    first: str
    last: str


class Attachment(TypedDict):
    name: str
    mime: str | None


class MessageJson(TypedDict):
    """A message of `show --json` (`message` and `context`), in the words every message is
    printed with (`id`, `time`, `sender`, `text`, `chat`: search, ask, MCP, review, export)."""

    id: int  # Casper's message id (chat.db's ROWID): `casper show ID`
    guid: str
    time: str | None  # local, with its UTC offset
    sender: str  # a display name, or "me"
    text: str
    chat: str | None  # the chat's name, as `casper chats` prints it
    chat_id: int
    kind: str  # text | attachment | system
    rowid: int  # deprecated: `id`, kept one release
    ts: str | None  # deprecated: `time`, kept one release
    edited: NotRequired[bool]
    reply_to: NotRequired[str]
    reactions: NotRequired[list[list[str]]]  # [sender, label]
    attachments: NotRequired[list[Attachment]]
    event: NotRequired[str]


class ShownChat(TypedDict):
    id: int
    name: str | None


class ReactionAsked(TypedDict):
    """`show` given a tapback's id: the reaction that was asked for, shown as its message."""

    ref: str
    guid: str
    reaction: str
    sender: str
    to: int


class ShowDoc(TypedDict):
    message: MessageJson
    context: list[MessageJson]
    chat: ShownChat
    reaction: NotRequired[ReactionAsked]


class HitMessage(TypedDict):
    id: int
    guid: str
    time: str | None
    sender: str
    text: str
    chat: str
    rowid: int  # deprecated: `id`, kept one release
    ts: str | None  # deprecated: `time`, kept one release


class HitJson(TypedDict):
    chunk_id: str
    chat: str
    score: float
    start: str | None
    end: str | None
    participants: list[str]
    messages: list[HitMessage]
    matched_words: list[str]


class SearchFilters(TypedDict):
    person: str | None
    chat: int | None
    since: str | None
    until: str | None
    mode: str
    lexical: str
    rerank: bool
    days: NotRequired[list[str | None]]  # what --since/--until were read as: [first, last]


class AskFilters(TypedDict):
    """What `ask --person/--chat/--since/--until` kept every search of the answer to."""

    person: str | None
    chat: int | None
    since: str | None
    until: str | None
    days: NotRequired[list[str | None]]  # what --since/--until were read as: [first, last]


class Reranked(TypedDict):
    """What ran, not what was asked: `why_not_reranked` when no rerank ran."""

    reranked: bool
    why_not_reranked: NotRequired[str]


class SearchDoc(Reranked):
    query: str
    filters: SearchFilters
    coverage: Covered | None  # None: nothing indexed
    understood: UnderstoodJson
    words: list[str]
    words_not_found: list[str]
    hits: list[HitJson]
    indexed_through: str | None


class AskDoc(Answer, Reranked):
    """`ask --json`: the agent's answer (casper.agent.answer_json.Answer) and what the request
    ran."""

    filters: AskFilters
    words_not_found: list[str]
    words_not_in_hits: list[str]
    llm_server: str | None
    indexed_through: str | None


class ContactJson(TypedDict):
    id: str
    name: str
    handles: list[str]
    names: dict[str, str]  # the card's names by kind (first, last, nickname, …)
    sent: int  # by the owner in one-to-one chats with them
    received: int  # by them, in every chat
    sent_in_groups: int  # by the owner in group chats they are in
    first: str | None
    last: str | None


class ChatJson(TypedDict):
    id: int
    name: str
    is_group: bool
    members: list[str]
    messages: int
    first: str | None
    last: str | None


class PersonJson(TypedDict):
    id: str
    name: str
    handles: list[str]


class Days(TypedDict):
    """The local days a --since/--until range resolved to (None: open)."""

    since: str | None
    until: str | None


class StatsScope(TypedDict):
    """What `stats` is about: a person, a chat (or group), or the owner overall ("me")."""

    kind: str  # person | chat | me
    id: str  # person id, chat id (as text), or "me"
    name: str
    members: int  # people: 1 for a person, the chat's others, every known person for "me"


class StatsDoc(TypedDict):
    person: NotRequired[PersonJson]  # only when the scope is a person
    scope: StatsScope
    sent: int
    received: int
    first: str | None
    last: str | None
    active_days: int
    median_reply_s: dict[str, float | None]  # "me", "them"
    initiations: dict[str, int]  # "me", "them"
    top_emoji: list[list[str | int]]  # [emoji, count]
    busiest_hours: list[list[int]]  # [hour, count]
    by_month: dict[str, int]  # "2024-03": count
    range: Days
    chats: NotRequired[ChatSplit]  # one-to-one and shared-group counts, apart
    series: Series  # the pictures' numbers (casper.app.stats_series)
    names: dict[str, str]  # display names of the person ids the series mention
    zone: str  # the time zone of every local day and hour here


class PersonCount(TypedDict):
    id: str
    name: str
    messages: int  # one_to_one + in_groups: `stats NAME`'s sent + received for the year
    one_to_one: int  # both sides of our 1:1 chats
    in_groups: int  # what they wrote anywhere else (groups, ones they left too)
    rank_before: int | None  # their place on the compared dates the year before; None: not in it


class Moment(TypedDict):
    """A message of the year: when, who, and its text as the privacy allows (None: hidden)."""

    id: int
    time: str | None
    sender: str
    chat: str
    text: str | None
    ts: str | None  # deprecated: `time`, kept one release


class YearFigures(TypedDict):
    year: int
    sent: int
    received: int
    active_days: int
    people: int  # people who wrote or were written to (1:1) that year
    longest_streak: int
    median_reply_s: dict[str, float | None]
    top_emoji: list[list[str | int]]  # [emoji, count]


class BusiestDay(TypedDict):
    day: str | None  # ISO local day, the first of `days`; None when the year has no message
    days: list[str]  # every day with that many messages (a tie shows them all)
    messages: int


class HistoryDays(TypedDict):
    first: str  # ISO local days: the first and last message of the whole history
    last: str


class Compared(TypedDict):
    """What of the year is set against the same dates of the year before."""

    days: list[str]  # ["MM-DD", "MM-DD"], inclusive: the dates both years' history holds
    whole_year: bool  # false when the history starts or ends inside one of the two years
    this: YearFigures  # this year over those dates (`before` is the year before over them)


class ReviewDoc(TypedDict):
    year: int
    zone: str
    shared: bool  # --share: no message text, people as initials
    history: HistoryDays
    this: YearFigures  # the whole year, as the history holds it
    compared: Compared | None  # None: the year before is not in the history
    before: YearFigures | None  # the year before over the compared dates
    top_people: list[PersonCount]
    busiest_day: BusiestDay
    new_people: list[str] | None  # first met this year (as the privacy names them); None when
    # the history starts this year, so who is new cannot be told
    first_message: Moment | None
    last_message: Moment | None
    stats: StatsDoc  # the owner's `stats --since YEAR-01-01 --until YEAR-12-31 --by month`


class Reconciled(TypedDict):
    """`index --json` after chat.db's history was rewritten (casper.indexer.reconcile)."""

    reason: str
    vanished: int
    new: int
    renumbered: int
    changed: int
    kept: int
    chats_rechunked: int
    chunks_rewritten: NotRequired[int]
    vectors_reused: NotRequired[int]
    vectors_embedded: NotRequired[int]


class Ingested(TypedDict):
    """casper.indexer.report.IngestReport as JSON."""

    messages_total: int
    messages_new: int
    chunks_total: int
    chunks_new: int
    decode_failures: int
    reactions: int
    events: int
    deleted: int
    undated: int
    recently_deleted_skipped: int
    coverage: Span
    elapsed_s: float
    noop: bool
    reconciled: Reconciled | None
    timings: dict[str, float]
    cpu_s: dict[str, float]


class EmbedderJson(TypedDict):
    backend: str
    device: str
    threads: int | None
    notice: str | None
    why: NotRequired[str]  # a bulk run's engine: why it (casper.backends.bulk)


class RanIn(TypedDict):
    pid: int


class IndexDoc(Ingested):
    vectors_done: int
    vectors_total: int
    vectors_new: int
    embed_chunks_per_s: float | None
    embedder: EmbedderJson | None
    ran_in: NotRequired[RanIn]  # the run was handed to the casper service


class Check(TypedDict):
    """One line of `casper doctor`."""

    name: str
    status: str  # ok | warn | fail
    detail: str
    hint: str | None


class SkippedEntry(TypedDict):
    kind: str
    name: str
    reason: str


class DoctorCounts(TypedDict, total=False):
    """What the checks counted on the way (only what they could read)."""

    chat_db_rows: int
    coverage: Span
    decode_failures: int
    messages: int
    people: int
    undated: int
    vectors_done: int
    vectors_total: int
    skipped_schema: dict[str, list[SkippedEntry]]  # per file


class DoctorReport(TypedDict):
    checks: list[Check]
    counts: DoctorCounts


class ToolDoc(TypedDict):
    """One tool call from outside the agent (`casper mcp`; casper.app.tool_calls)."""

    tool: str
    arguments: dict[str, JSONValue]
    ok: bool
    text: str  # what the model would read
    citations: list[Citation]
    words_not_found: list[str]  # the searched words no message contains, as `search --json`
    indexed_through: str | None


# what `--json` prints, one of these per request
Document: TypeAlias = "SearchDoc | list[ContactJson] | StatsDoc | ShowDoc | AskDoc | ToolDoc"


def message_json(
    m: StoredMessage, names: Mapping[str, str], tz: tzinfo, chat: str | None
) -> MessageJson:
    """A message as `show --json` prints it; `chat`: the name of the chat it is in."""
    time = iso(m.ts, tz)
    data: MessageJson = {
        "id": m.rowid,
        "guid": m.guid,
        "time": time,
        "sender": names.get(m.sender, m.sender),
        "text": m.text,
        "chat": chat,
        "chat_id": m.chat_id,
        "kind": m.kind,
        "rowid": m.rowid,
        "ts": time,
    }
    if m.edited:
        data["edited"] = True
    if m.reply_to:
        data["reply_to"] = m.reply_to
    if m.reactions:
        data["reactions"] = [[names.get(s, s), label] for s, label in m.reactions]
    if m.attachments:
        data["attachments"] = [{"name": n, "mime": mime} for n, mime in m.attachments]
    if m.event:
        data["event"] = m.event
    for name, value in m.carried:  # chat.db columns stored as they are (ingest.columns)
        if value is not None:  # under its own name, which MessageJson must declare
            cast(dict[str, object], data)[name] = value
    return data


def stats_json(
    person: Person | None,
    stats: PersonStats,
    days: Days,
    tz: tzinfo,
    *,
    scope: StatsScope,
    series: Series,
    names: dict[str, str],
    zone: str,
) -> StatsDoc:
    """`stats --json`: what it is about, the figures (times as local ISO), the days they cover
    and the series the pictures draw."""
    doc: StatsDoc = {
        "scope": scope,
        **stats,
        "first": iso(stats["first"], tz),
        "last": iso(stats["last"], tz),
        "range": days,
        "series": series,
        "names": names,
        "zone": zone,
    }
    if person is not None:
        doc["person"] = {"id": person.id, "name": person.name, "handles": list(person.handles)}
    return doc


def hit_json(hit: Hit, tz: tzinfo, words: Sequence[str] = ()) -> HitJson:
    """One hit; `matched_words`: which of the searched `words` its messages contain."""
    from casper.search.words import matched

    return {
        "chunk_id": hit.chunk_id,
        "chat": hit.chat,
        "score": round(hit.score, 6),
        "start": iso(hit.start, tz),
        "end": iso(hit.end, tz),
        "participants": list(hit.participants),
        "messages": [
            {
                "id": m.rowid,
                "guid": m.guid,
                "time": iso(m.ts, tz),
                "sender": m.sender,
                "text": m.text,
                "chat": hit.chat,
                "rowid": m.rowid,
                "ts": iso(m.ts, tz),
            }
            for m in hit.messages
        ],
        "matched_words": matched(words, (m.text for m in hit.messages)),
    }


def index_json(run: IndexRunReport, tz: tzinfo) -> IndexDoc:
    """`index --json` from an IndexRunReport (casper.indexer.run): the ingest report, the
    coverage as timestamps, the vectors (`vectors_new`: embedded by this run) and where and how
    fast the embedder ran."""
    from casper.indexer.run import placement_of

    report = run.ingest
    # the dataclass's fields as they are (asdict): a field added there and not to `Ingested`
    # fails the `--json` type test instead of passing unseen
    ingested = cast("Ingested", report.to_dict())
    fill = run.vectors
    embedded = fill.embedded if fill else 0
    spent = report.timings.get("embed", 0.0)
    placement = placement_of(run.embedder)
    return {
        **ingested,
        "coverage": {"first": iso(report.coverage["first"], tz),
                     "last": iso(report.coverage["last"], tz)},
        "vectors_done": fill.done if fill else 0,
        "vectors_total": fill.total if fill else 0,
        "vectors_new": embedded,
        "embed_chunks_per_s": round(embedded / spent, 1) if embedded and spent > 0 else None,
        "embedder": None if placement is None else _embedder_json(placement),
    }  # fmt: skip


def _embedder_json(placement: Placed) -> EmbedderJson:
    out: EmbedderJson = {
        "backend": placement.backend, "device": placement.device,
        "threads": placement.threads, "notice": placement.notice,
    }  # fmt: skip
    if placement.why:  # a bulk run's engine, and why (casper.backends.bulk)
        out["why"] = placement.why
    return out
