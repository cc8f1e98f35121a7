"""The chunker as it was before the fast path (casper.indexer.chunking at ba0e4f6), kept verbatim as
the reference the equivalence tests compare the fast chunker against: chunk boundaries, ids,
texts and hashes must stay identical, or every existing index would re-embed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo

from casper.config import CHUNK_GAP_S, CHUNK_MAX_CHARS, CHUNK_SIZE, CHUNK_STRIDE
from casper.indexer.chunking import CHUNKER_VERSION, MAX_SEGMENT, unit_name
from casper.records import ME, SEGMENT_KEY, ChatInfo, Chunk, StoredMessage


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


def _line(m: StoredMessage, names: Mapping[str, str], max_chars: int) -> str:
    sender = names.get(m.sender, "me" if m.sender == ME else m.sender)
    line = f"{sender}: {' '.join(m.text.split())}"
    return line if len(line) <= max_chars else line[: max_chars - 1] + "…"


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


def _make_chunk(
    msgs: Sequence[StoredMessage],
    lines: Sequence[str],
    chat: ChatInfo,
    names: Mapping[str, str],
    unit: str,
    zone: tzinfo,
    segment_start: float,
) -> Chunk:
    text = "\n".join(lines)
    # an unset chat.db date (0) is no day: not "1970-01-01"
    ts = msgs[0].ts
    day = datetime.fromtimestamp(ts, zone).strftime("%Y-%m-%d") if ts > 0 else "date unknown"
    embed_text = f"{chat.name} — {day}\n{text}"
    participants: dict[str, None] = {}
    for m in msgs:
        participants[names.get(m.sender, "me" if m.sender == ME else m.sender)] = None
    # Members are hashed too: a membership change must rewrite the row's filter columns.
    digest = hashlib.sha1(
        f"{CHUNKER_VERSION}\n{embed_text}\n{','.join(chat.members)}".encode()
    ).hexdigest()
    return Chunk(
        id=f"{chat.id}:{msgs[0].rowid}:{msgs[-1].rowid}:{unit}",
        chat_id=chat.id,
        chat_name=chat.name,
        participants=tuple(participants),
        person_ids=tuple(chat.members),
        start=msgs[0].ts,
        end=msgs[-1].ts,
        rowids=tuple(m.rowid for m in msgs),
        guids=tuple(m.guid for m in msgs),
        text=text,
        embed_text=embed_text,
        content_hash=digest,
        extra={SEGMENT_KEY: repr(segment_start)},
    )


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
    unit = unit_name(size, stride)
    zone = _zone(tz_name)
    chunks: dict[str, Chunk] = {}
    for seg in segments(messages, gap_s):
        lines = [_line(m, names, max_chars) for m in seg]
        for lo, hi in window_bounds(len(seg), size, stride):
            for a, b in _split_by_chars(lines[lo:hi], max_chars):
                chunk = _make_chunk(
                    seg[lo + a : lo + b],
                    lines[lo + a : lo + b],
                    chat,
                    names,
                    unit,
                    zone,
                    seg[0].ts,
                )
                chunks.setdefault(chunk.id, chunk)
    return sorted(chunks.values(), key=lambda c: (c.start, c.rowids[0], c.end, c.rowids[-1]))
