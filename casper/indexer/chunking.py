"""PURE: one chat's messages → retrieval chunks (gap-split segments, sliding windows, char caps),
each with the date terms its messages mention.

Imports: stdlib (datetime, zoneinfo, hashlib, re), casper.records, casper.config's defaults,
casper.dates.mentions and ingest.columns (the carried columns a message's line holds the words of).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from zoneinfo import ZoneInfo

from casper.config import CHUNK_GAP_S, CHUNK_MAX_CHARS, CHUNK_SIZE, CHUNK_STRIDE
from casper.dates.mentions import maybe_dated, message_terms
from casper.records import (  # noqa: F401  (is_message_row: the unit's test, with its maker)
    ME,
    MESSAGE_UNIT,
    ChatInfo,
    Chunk,
    Piece,
    StoredMessage,
    is_message_row,
    to_chunk,
)
from ingest.columns import SEARCHED, searched_text

CHUNKER_VERSION = "c1"
# A segment longer than this is cut so an incremental re-chunk never reaches further back.
MAX_SEGMENT = 512


def unit_name(size: int, stride: int) -> str:
    """The chunk unit label used in chunk ids, e.g. "8x4" (windows) or "3x1" (passages)."""
    return f"{size}x{stride}"


@dataclass(frozen=True, slots=True)
class ChunkOptions:
    """How chats are cut into chunks (one object instead of five keywords on every call)."""

    size: int = CHUNK_SIZE
    stride: int = CHUNK_STRIDE
    gap_s: float = CHUNK_GAP_S
    max_chars: int = CHUNK_MAX_CHARS
    tz_name: str | tzinfo | None = None  # the zone of the day in each chunk's embed text
    messages_alone: bool = False  # each message a row of its own beside the windows too

    def signature(self) -> str:
        base = chunker_signature(self.size, self.stride, self.gap_s, self.max_chars)
        return f"{base}/{MESSAGE_UNIT}" if self.messages_alone and self.size > 1 else base


def chunker_signature(size: int, stride: int, gap_s: float, max_chars: int) -> str:
    """Everything that changes chunk contents; an index built with another one must be rebuilt."""
    return f"{CHUNKER_VERSION}/{unit_name(size, stride)}/gap{int(gap_s)}/max{max_chars}"


def segments(
    messages: Sequence[StoredMessage], gap_s: float, max_len: int = MAX_SEGMENT
) -> list[list[StoredMessage]]:
    """Searchable messages in time order, split where the silence exceeds `gap_s`."""
    ordered = sorted((m for m in messages if m.searchable), key=lambda m: (m.ts, m.rowid))
    out: list[list[StoredMessage]] = []
    for m in ordered:
        if out and m.ts - out[-1][-1].ts <= gap_s and len(out[-1]) < max_len:
            out[-1].append(m)
        else:
            out.append([m])
    return out


def window_bounds(count: int, size: int, stride: int) -> list[tuple[int, int]]:
    """[start, end) windows anchored at 0; a window wholly inside its predecessor is skipped."""
    if size < 1 or stride < 1:
        raise ValueError("chunk size and stride must be positive")
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < count:
        if start == 0 or count > start - stride + size:
            bounds.append((start, min(start + size, count)))
        else:
            break
        start += stride
    return bounds


def _split_by_chars(lines: list[str], max_chars: int) -> list[tuple[int, int]]:
    """Greedy [start, end) pieces of a window whose joined lines stay within `max_chars`."""
    pieces: list[tuple[int, int]] = []
    start, used = 0, 0
    for i, line in enumerate(lines):
        cost = len(line) + (1 if i > start else 0)
        if i > start and used + cost > max_chars:
            pieces.append((start, i))
            start, used = i, len(line)
        else:
            used += cost
    if lines:
        pieces.append((start, len(lines)))
    return pieces


def _zone(tz_name: str | tzinfo | None) -> tzinfo:
    """A zone by IANA name, or the zone itself (one read from /etc/localtime has no name)."""
    if isinstance(tz_name, tzinfo):
        return tz_name
    return ZoneInfo(tz_name) if tz_name else UTC


class _DayNames:
    """`YYYY-MM-DD` of a timestamp in a zone, as `datetime.fromtimestamp(ts, zone).strftime`
    gives it, without a datetime per chunk (a million chunks spent seconds in it): the zone's
    offset is looked up once per UTC day of history, the name once per local day. A UTC day
    holding an offset change, and the last millisecond before a local midnight (where
    fromtimestamp's rounding to microseconds could tip the day), take the exact path."""

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self.offsets: dict[int, float | None] = {}
        self.names: dict[int, str] = {}

    def __call__(self, ts: float) -> str:
        if ts <= 0:
            return "date unknown"  # an unset chat.db date (0) is no day: not "1970-01-01"
        utc_day = int(ts // 86400)
        offset = self.offsets.get(utc_day, _UNSET)
        if offset is _UNSET:
            offset = self.offsets[utc_day] = self._steady_offset(utc_day)
        if offset is None:
            return self._exact(ts)
        local = ts + offset
        if local % 86400 >= 86399.999:
            return self._exact(ts)
        day = int(local // 86400)
        name = self.names.get(day)
        if name is None:
            name = self.names[day] = date.fromordinal(_EPOCH_ORDINAL + day).strftime("%Y-%m-%d")
        return name

    def _steady_offset(self, utc_day: int) -> float | None:
        """The zone's offset all through this UTC day; None when it changes during it."""
        first = datetime.fromtimestamp(utc_day * 86400, self.zone).utcoffset()
        last = datetime.fromtimestamp(utc_day * 86400 + 86399, self.zone).utcoffset()
        return first.total_seconds() if first is not None and first == last else None

    def _exact(self, ts: float) -> str:
        return datetime.fromtimestamp(ts, self.zone).strftime("%Y-%m-%d")


@functools.lru_cache(maxsize=8)
def _day_names(zone: tzinfo) -> _DayNames:
    """One cache per zone for the whole run: chats are chunked one by one, and each covers
    only a few of the days another already looked up."""
    return _DayNames(zone)


_UNSET = float("inf")  # an offset not looked up yet (no zone is a whole day off UTC)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


# A searchable message as the chunker reads it: (ts, rowid, sender, text, guid).
Row = tuple[float, int, str, str, str]


def searchable_rows(messages: Iterable[StoredMessage]) -> list[Row]:
    """The searchable messages as chunker rows, in time order (ties by rowid): what
    `Store.searchable_rows` reads, the words of the searched carried columns included."""
    rows = [(m.ts, m.rowid, m.sender, _searched(m), m.guid) for m in messages if m.searchable]
    rows.sort(key=_by_time)
    return rows


def _searched(m: StoredMessage) -> str:
    if not SEARCHED:
        return m.text
    held = dict(m.carried)
    return searched_text(m.text, [held.get(c.name) for c in SEARCHED])


def _by_time(row: Row) -> tuple[float, int]:
    return row[0], row[1]


def _row_segments(rows: Sequence[Row], gap_s: float, max_len: int) -> list[list[Row]]:
    """`segments` over rows already in time order."""
    out: list[list[Row]] = []
    current: list[Row] = []
    last_ts = 0.0
    for row in rows:
        if current and row[0] - last_ts <= gap_s and len(current) < max_len:
            current.append(row)
        else:
            current = [row]
            out.append(current)
        last_ts = row[0]
    return out


def chunk_pieces(
    rows: Sequence[Row], chat: ChatInfo, names: Mapping[str, str], options: ChunkOptions
) -> list[Piece]:
    """Chunks of one chat in time order, from its searchable rows in time order (see
    `searchable_rows`); ids are stable when later messages are appended."""
    size, stride, max_chars = options.size, options.stride, options.max_chars
    unit = unit_name(size, stride)
    zone = _zone(options.tz_name)
    day_name = _day_names(zone)
    zone_key = str(getattr(zone, "key", "") or "")
    head = f"{chat.name} — "
    # Members are hashed too: a membership change must rewrite the row's filter columns.
    salt = f"\n{','.join(chat.members)}"
    prefix, suffix = f"{chat.id}:", f":{unit}"
    chat_id, chat_name, members = chat.id, chat.name, tuple(chat.members)
    labels: dict[str, str] = {}
    sha1 = hashlib.sha1
    out: dict[str, Piece] = {}
    for seg in _row_segments(rows, options.gap_s, MAX_SEGMENT):
        senders: list[str] = []
        lines: list[str] = []
        terms: list[tuple[str, ...]] = []  # each message's date terms, from the day it was sent
        for row in seg:
            label = _label(row[2], names, labels)
            line = _line(label, row[3], max_chars)
            senders.append(label)
            lines.append(line)
            terms.append(_date_terms(row[3], row[0], day_name, zone_key))
        seg_start = seg[0][0]
        # how many of the first i messages mention a date: most windows have none, and then
        # their date terms are "" without walking the window
        dated = [0]
        for ts in terms:
            dated.append(dated[-1] + (1 if ts else 0))
        rowids = [row[1] for row in seg]
        guids = [row[4] for row in seg]
        for lo, hi in window_bounds(len(seg), size, stride):
            window = lines[lo:hi]
            if sum(map(len, window)) + (hi - lo - 1) <= max_chars:
                parts: Sequence[tuple[int, int]] = ((0, hi - lo),)  # the common case: fits
            else:
                parts = _split_by_chars(window, max_chars)
            for a, b in parts:
                msgs = seg[lo + a : lo + b]
                cid = f"{prefix}{msgs[0][1]}:{msgs[-1][1]}{suffix}"
                if cid in out:
                    continue  # the first window that produced an id keeps it
                text = "\n".join(window[a:b])
                embed_text = f"{head}{day_name(msgs[0][0])}\n{text}"
                # the hash keys the vector, so it covers the embedded text only: the date
                # terms follow from the same messages and days (a new rule for them is a new
                # index schema, which rebuilds the table and keeps the vectors)
                digest = sha1(f"{CHUNKER_VERSION}\n{embed_text}{salt}".encode()).hexdigest()
                if dated[lo + b] == dated[lo + a]:
                    dates = ""
                else:
                    dates = " ".join(dict.fromkeys(t for ts in terms[lo + a : lo + b] for t in ts))
                out[cid] = Piece(
                    cid, chat_id, chat_name, tuple(dict.fromkeys(senders[lo + a : lo + b])),
                    members, msgs[0][0], msgs[-1][0], seg_start, tuple(rowids[lo + a : lo + b]),
                    tuple(guids[lo + a : lo + b]), text, embed_text, digest, dates,
                )  # fmt: skip
    return sorted(out.values(), key=_piece_order)


def message_pieces(
    rows: Sequence[Row], chat: ChatInfo, names: Mapping[str, str], options: ChunkOptions
) -> list[Piece]:
    """Each searchable message alone, with its sender and day, as a row beside the windows:
    a single long message is then scored on its own words and its own vector, not diluted by
    the messages around it (the search fuses both per message and still shows windows). It
    carries its segment's start, as the windows do, so re-chunking a chat from a segment on
    re-produces it; its embedded text is a one-message window's, so the two share a vector.
    None unless `options.messages_alone`, nor when the windows are single messages already."""
    if not options.messages_alone or options.size <= 1:
        return []
    zone = _zone(options.tz_name)
    day_name = _day_names(zone)
    zone_key = str(getattr(zone, "key", "") or "")
    head = f"{chat.name} — "
    salt = f"\n{','.join(chat.members)}"
    labels: dict[str, str] = {}
    members = tuple(chat.members)
    out: list[Piece] = []
    for seg in _row_segments(rows, options.gap_s, MAX_SEGMENT):
        seg_start = seg[0][0]
        for ts, rowid, sender, text, guid in seg:
            label = _label(sender, names, labels)
            line = _line(label, text, options.max_chars)
            embed_text = f"{head}{day_name(ts)}\n{line}"
            digest = hashlib.sha1(f"{CHUNKER_VERSION}\n{embed_text}{salt}".encode()).hexdigest()
            dates = " ".join(_date_terms(text, ts, day_name, zone_key))
            out.append(Piece(
                f"{chat.id}:{rowid}:{rowid}:{MESSAGE_UNIT}", chat.id, chat.name, (label,),
                members, ts, ts, seg_start, (rowid,), (guid,), line, embed_text, digest, dates,
            ))  # fmt: skip
    return out


def index_pieces(
    rows: Sequence[Row], chat: ChatInfo, names: Mapping[str, str], options: ChunkOptions
) -> list[Piece]:
    """Every row the index holds for one chat: its windows (`chunk_pieces`), then, with
    `options.messages_alone`, each message alone (`message_pieces`)."""
    return [*chunk_pieces(rows, chat, names, options), *message_pieces(rows, chat, names, options)]


def _label(sender: str, names: Mapping[str, str], labels: dict[str, str]) -> str:
    """How a sender is shown in a chunk's lines ("me", a name, else the handle), cached."""
    label = labels.get(sender)
    if label is None:
        label = labels[sender] = names.get(sender, "me" if sender == ME else sender)
    return label


def _line(label: str, text: str, max_chars: int) -> str:
    """One message as a chunk line, whitespace folded and cut at `max_chars`."""
    line = f"{label}: {' '.join(text.split())}"
    return line[: max_chars - 1] + "…" if len(line) > max_chars else line


def _date_terms(text: str, ts: float, day_name: _DayNames, zone: str) -> tuple[str, ...]:
    """The date terms of one message, resolved against its local day (none without one)."""
    if not maybe_dated(text):  # most messages: no day to look up
        return ()
    day = day_name(ts)
    if day[:1] not in "12":  # "date unknown"
        return ()
    return message_terms(text, _day_of(day), zone)


@functools.lru_cache(maxsize=4096)
def _day_of(name: str) -> date:
    return date.fromisoformat(name)


def _piece_order(p: Piece) -> tuple[float, int, float, int]:
    return p.start, p.rowids[0], p.end, p.rowids[-1]


def chunk_chat(
    messages: Sequence[StoredMessage],
    chat: ChatInfo,
    names: Mapping[str, str],
    *,
    size: int = CHUNK_SIZE,
    stride: int = CHUNK_STRIDE,
    gap_s: float = CHUNK_GAP_S,
    max_chars: int = CHUNK_MAX_CHARS,
    tz_name: str | tzinfo | None = None,
) -> list[Chunk]:
    """Chunks of one chat in time order; ids are stable when later messages are appended."""
    options = ChunkOptions(size, stride, gap_s, max_chars, tz_name)
    pieces = chunk_pieces(searchable_rows(messages), chat, names, options)
    return [to_chunk(p) for p in pieces]
