"""The chunker checked against what it promises, over generated chats, not against a second
copy of itself (a logic error shared by a copy would pass).

Each property is stated from the spec: the chunker's docstrings ("searchable messages in
time order, split where the silence exceeds gap_s"; windows "anchored at 0; a window wholly
inside its predecessor is skipped"; greedy pieces "whose joined lines stay within max_chars";
ids "stable when later messages are appended") and what the incremental index (`_plan_chat`)
relies on: the chunks of a chat before its last segment never change when messages arrive,
so only the rows from the last segment's start are re-chunked.

The generated chats have ties in one second, silences of exactly the gap and a second more,
undated (ts 0) rows, system events and blank bodies, rowids in any order, arbitrary unicode,
CJK/emoji and lines longer than the char cap, in zones with DST nights and odd offsets.
The exact bytes (ids, hashes) are pinned in test_chunking_golden."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from unittest import mock
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from casper.indexer.chunking import (
    MAX_SEGMENT,
    ChunkOptions,
    chunk_chat,
    chunk_pieces,
    searchable_rows,
    window_bounds,
)
from casper.records import ME, ChatInfo, Chunk, Piece, StoredMessage, to_chunk, to_piece

PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = {"p_sam": "Sam", "p_alex": "Alex", ME: "me"}  # p_kim has no name: the id is the label
SENDERS = [ME, "p_sam", "p_alex", "p_kim"]
ZONES = [None, "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"]
ANCHORS = [
    datetime(2024, 3, 31, 0, 30, tzinfo=UTC).timestamp(),  # Berlin springs forward
    datetime(2024, 11, 3, 5, 30, tzinfo=UTC).timestamp(),  # New York falls back
    datetime(2024, 6, 30, 21, 59, 59, tzinfo=UTC).timestamp(),  # a second before a midnight
    1.0,  # the first seconds of 1970: negative local days west of UTC
]
TEXTS = ["hi", "see you at 8?", "a\n\nb\tc", "寿司 🍣 tonight", "❤️ thanks 👍🏽"]
TEXTS += ["", " \u00a0\u2028"]  # blank: not searchable
# The chunker module, wherever it lives: its MAX_SEGMENT is patched to reach the cut with
# short chats.
CHUNKER = sys.modules[chunk_pieces.__module__]


# ------------------------------------------------------------------------------- the spec


def in_time_order(messages: Sequence[StoredMessage]) -> list[StoredMessage]:
    """The searchable messages (not system events, not blank) in time order, ties by rowid."""
    searchable = [m for m in messages if m.kind != "system" and m.text.strip()]
    return sorted(searchable, key=lambda m: (m.ts, m.rowid))


def spec_segments(
    ordered: Sequence[StoredMessage], gap_s: float, cap: int
) -> list[list[StoredMessage]]:
    """Runs split where the silence since the previous message exceeds `gap_s`, each run then
    cut into consecutive blocks of `cap` messages (MAX_SEGMENT)."""
    runs: list[list[StoredMessage]] = []
    for i, m in enumerate(ordered):
        if i == 0 or m.ts - ordered[i - 1].ts > gap_s:
            runs.append([])
        runs[-1].append(m)
    return [run[i : i + cap] for run in runs for i in range(0, len(run), cap)]


def spec_windows(n: int, size: int, stride: int) -> list[tuple[int, int]]:
    """[start, end) windows of a segment of n: starts 0, stride, 2*stride, ..., each `size`
    long or cut at n, up to the first that reaches n (any later one would lie inside it)."""
    out: list[tuple[int, int]] = []
    for start in range(0, n, stride):
        out.append((start, min(start + size, n)))
        if start + size >= n:
            break
    return out


def label(sender: str, names: dict[str, str]) -> str:
    return names.get(sender, "me" if sender == ME else sender)


def spec_line(m: StoredMessage, names: dict[str, str], max_chars: int) -> str:
    """`sender: text` with whitespace runs collapsed, cut to max_chars ending in "…"."""
    line = f"{label(m.sender, names)}: {' '.join(m.text.split())}"
    return line if len(line) <= max_chars else line[: max_chars - 1] + "…"


def spec_day(ts: float, tz_name: str | None) -> str:
    if ts <= 0:
        return "date unknown"
    return datetime.fromtimestamp(ts, ZoneInfo(tz_name) if tz_name else UTC).strftime("%Y-%m-%d")


# ---------------------------------------------------------------------------- generated input


@dataclass(frozen=True)
class Case:
    messages: list[StoredMessage]  # as drawn: in time order but for undated rows and rowids
    chat: ChatInfo
    names: dict[str, str]
    options: ChunkOptions
    max_segment: int  # MAX_SEGMENT while this case is chunked


# A few texts per chat, besides TEXTS: arbitrary unicode, and lines longer than most caps in
# ASCII, CJK, emoji and with spaces.
texts = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.builds(lambda s, n: s * n, st.sampled_from(["x", "寿", "🍣", "ab "]), st.integers(50, 700)),
)
KINDS = ["text", "attachment", "system"]


@st.composite
def messages_after(
    draw: st.DrawFn, ts: float, first_rowid: int, gap_s: float, *, max_size: int, undated: bool
) -> list[StoredMessage]:
    """Messages from `ts` on, rowids from `first_rowid` up (in time order or shuffled).

    A message is one drawn integer whose digits pick its silence since the previous one
    (none, short, half the gap, exactly the gap, a second more, a day), sender, kind, text
    and, now and then, no date: one draw a message keeps 40-message chats cheap, and
    shrinking it to 0 gives the plainest message (same second, from me, "hi")."""
    pool = TEXTS + draw(st.lists(texts, max_size=4))
    n = draw(st.sampled_from(range(max_size + 1)))  # uniform: integers() favours small ones
    genes = draw(st.lists(st.integers(0, 2**24), min_size=n, max_size=n))
    rowids = list(range(first_rowid, first_rowid + len(genes)))
    if draw(st.booleans()):
        rowids = draw(st.permutations(rowids))
    # most silences within the gap, so segments run long enough for windows and caps
    steps = [0.0, 0.0, 0.5, 1.0, *[60.0] * 14, *[300.0] * 6, 600.0, 600.0, gap_s / 2]
    steps += [gap_s, gap_s, gap_s + 1, 26 * 3600.0]  # 1 in 16 a new segment
    out = []
    for i, (gene, rowid) in enumerate(zip(genes, rowids, strict=True)):
        gene, step = divmod(gene, len(steps))
        gene, sender = divmod(gene, len(SENDERS))
        gene, kind = divmod(gene, 5)  # text 3 in 5, attachment and system 1 in 5 each
        gene, text = divmod(gene, len(pool))
        ts += steps[step] if i else 0.0
        dated = not undated or gene % 20 != 19
        out.append(
            StoredMessage(
                rowid=rowid,
                guid=f"g{rowid}",
                chat_id=7,
                sender=SENDERS[sender],
                ts=ts if dated else 0.0,
                text=pool[text],
                kind=KINDS[max(0, kind - 2)],
            )
        )
    return out


@st.composite
def cases(draw: st.DrawFn, *, max_size: int = 40, dense: bool = False) -> Case:
    """A chat and chunker settings. `dense`: one segment of searchable messages a second
    apart, overlapping windows (stride < size) and the cap at a boundary, where the greedy
    split and the chunk order are decided."""
    size = draw(st.integers(2 if dense else 1, 9))
    stride = draw(st.integers(1, size - 1 if dense else size))
    gap_s = draw(st.sampled_from([6 * 3600.0, 1800.0]))
    start = draw(st.sampled_from(ANCHORS))
    messages = draw(messages_after(start, 1, gap_s, max_size=max_size, undated=not dense))
    if dense:
        messages = [
            replace(m, ts=start + i, kind="text", text=m.text if m.text.strip() else "ok")
            for i, m in enumerate(messages)
        ]
    max_segment = MAX_SEGMENT
    if not dense:
        max_segment = draw(st.sampled_from([MAX_SEGMENT] * 4 + [2, 8]))
    max_chars = 0 if dense else draw(st.sampled_from([10**6, 1500, 200, 60, 1, 0, 0]))
    ordered = in_time_order(messages)
    if max_chars == 0 and ordered:
        # right at a boundary: the joined lines of some messages from a window's start (where
        # a piece starts), or one char off
        seg = draw(st.sampled_from(spec_segments(ordered, gap_s, max_segment)))
        i = draw(st.sampled_from([lo for lo, _ in spec_windows(len(seg), size, stride)]))
        run = seg[i : i + draw(st.integers(1, size))]
        max_chars = len("\n".join(spec_line(m, NAMES, 10**6) for m in run))
        max_chars += draw(st.sampled_from([0, 0, -1, 1]))
    tz_name = draw(st.sampled_from(ZONES))
    options = ChunkOptions(size, stride, gap_s, max(max_chars, 1), tz_name)
    members = draw(st.sampled_from([(), ("p_sam",), ("p_sam", "p_alex")]))
    name = draw(st.sampled_from(["Sam", "Trip crew", "寿司 club"]))
    chat = ChatInfo(7, "chat-guid", name, len(members) > 1, members)
    return Case(messages, chat, NAMES, options, max_segment)


@contextmanager
def segment_cap(n: int) -> Iterator[None]:
    with mock.patch.object(CHUNKER, "MAX_SEGMENT", n):
        yield


def chunks_of(case: Case, messages: Sequence[StoredMessage] | None = None) -> list[Chunk]:
    o = case.options
    with segment_cap(case.max_segment):
        return chunk_chat(
            case.messages if messages is None else messages,
            case.chat,
            case.names,
            size=o.size,
            stride=o.stride,
            gap_s=o.gap_s,
            max_chars=o.max_chars,
            tz_name=o.tz_name,
        )


def pieces_of(case: Case, messages: Sequence[StoredMessage] | None = None) -> list[Piece]:
    """`to_piece` keeps the segment start, which `Chunk.__eq__` leaves out."""
    return [to_piece(c) for c in chunks_of(case, messages)]


# ------------------------------------------------------------------------------- checks


def check_coverage(case: Case, chunks: Sequence[Chunk]) -> None:
    """Every searchable message is in a chunk; system events and blank bodies never are."""
    searchable = {m.rowid for m in in_time_order(case.messages)}
    assert {r for c in chunks for r in c.rowids} == searchable


def check_segments(case: Case, chunks: Sequence[Chunk]) -> None:
    """A chunk lies inside one segment (no silence over gap_s inside it, no MAX_SEGMENT cut
    across it), and its segment start is that segment's first message's ts."""
    o = case.options
    segs = spec_segments(in_time_order(case.messages), o.gap_s, case.max_segment)
    segment_of = {m.rowid: i for i, seg in enumerate(segs) for m in seg}
    for p in map(to_piece, chunks):
        (i,) = {segment_of[r] for r in p.rowids}
        assert p.segment_start == segs[i][0].ts
        ts_of = {m.rowid: m.ts for m in segs[i]}
        stamps = [ts_of[r] for r in p.rowids]
        assert all(b - a <= o.gap_s for a, b in zip(stamps, stamps[1:], strict=False))


def check_windows(case: Case, chunks: Sequence[Chunk]) -> None:
    """Per segment: the windows of `spec_windows`; one that fits max_chars is one chunk,
    one that does not is split into consecutive pieces, each within max_chars and ended only
    where the next line would not fit (greedy). Nothing else is a chunk. With no cap in reach
    the chunks are exactly the windows."""
    o = case.options
    segs = spec_segments(in_time_order(case.messages), o.gap_s, case.max_segment)
    line_of: dict[int, str] = {}
    for c in chunks:
        for rowid, line in zip(c.rowids, c.text.split("\n"), strict=True):
            assert line_of.setdefault(rowid, line) == line  # a message reads the same everywhere
    segment_of = {m.rowid: i for i, seg in enumerate(segs) for m in seg}
    spans: list[set[tuple[int, int]]] = [set() for _ in segs]
    for c in chunks:
        seg = segs[segment_of[c.rowids[0]]]
        a = [m.rowid for m in seg].index(c.rowids[0])
        assert c.rowids == tuple(m.rowid for m in seg[a : a + len(c.rowids)])  # consecutive
        spans[segment_of[c.rowids[0]]].add((a, a + len(c.rowids)))
    for seg, got in zip(segs, spans, strict=True):
        lines = [line_of.get(m.rowid, "") for m in seg]
        expected = set()
        for lo, hi in spec_windows(len(seg), o.size, o.stride):
            a = lo
            while a < hi:
                ends = [b for start, b in got if start == a and b <= hi]
                assert ends, f"no piece of window {lo}:{hi} starts at {a}"
                b = max(ends)
                assert len("\n".join(lines[a:b])) <= o.max_chars
                # greedy: a piece ends before its window does only where the next line overflows
                assert b == hi or len("\n".join(lines[a : b + 1])) > o.max_chars
                expected.add((a, b))
                a = b
        assert got == expected


def check_fields(case: Case, chunks: Sequence[Chunk]) -> None:
    """Every field of every chunk as the spec defines it from the chunk's own messages:
    the id `chat:first rowid:last rowid:unit`, lines `sender: text` cut to max_chars with "…",
    the embed text's chat name and local day, one content hash per embed text."""
    o, chat = case.options, case.chat
    by_rowid = {m.rowid: m for m in case.messages}
    for c in chunks:
        msgs = [by_rowid[r] for r in c.rowids]
        assert c.id == f"{chat.id}:{msgs[0].rowid}:{msgs[-1].rowid}:{o.size}x{o.stride}"
        assert (c.chat_id, c.chat_name, c.person_ids) == (chat.id, chat.name, chat.members)
        assert c.guids == tuple(m.guid for m in msgs)
        assert (c.start, c.end) == (msgs[0].ts, msgs[-1].ts)
        assert c.participants == tuple(dict.fromkeys(label(m.sender, case.names) for m in msgs))
        assert c.text.split("\n") == [spec_line(m, case.names, o.max_chars) for m in msgs]
        assert len(c.text) <= o.max_chars
        assert c.embed_text == f"{chat.name} — {spec_day(c.start, o.tz_name)}\n{c.text}"
        assert len(c.content_hash) == 40 and int(c.content_hash, 16) >= 0
    hashes = {c.embed_text: c.content_hash for c in chunks}
    assert len(set(hashes.values())) == len(hashes)  # one hash per embed text, and only one
    assert all(hashes[c.embed_text] == c.content_hash for c in chunks)


def check_members_hashed(case: Case, chunks: Sequence[Chunk]) -> None:
    """A membership change changes every content hash (the index then rewrites the rows'
    person filter columns) and nothing else: same ids, same texts."""
    joined = replace(case, chat=replace(case.chat, members=(*case.chat.members, "p_new")))
    again = chunks_of(joined)
    assert [(c.id, c.embed_text) for c in again] == [(c.id, c.embed_text) for c in chunks]
    assert all(a.content_hash != b.content_hash for a, b in zip(again, chunks, strict=True))


def check_order(case: Case, chunks: Sequence[Chunk]) -> None:
    """Chunks in time order (by first, then last message); a chunk's messages are
    consecutive in time order; no two chunks hold the same span, so ids are unique."""
    position = {m.rowid: i for i, m in enumerate(in_time_order(case.messages))}
    spans = [(position[c.rowids[0]], position[c.rowids[-1]]) for c in chunks]
    assert spans == sorted(spans)
    assert len(set(spans)) == len(spans) == len({c.id for c in chunks})
    for c in chunks:
        first = position[c.rowids[0]]
        assert [position[r] for r in c.rowids] == list(range(first, first + len(c.rowids)))


def check_input_order(case: Case, chunks: Sequence[Chunk], shuffled: list[StoredMessage]) -> None:
    """The same messages in another order give the same chunks (ids, contents, order)."""
    assert pieces_of(case, shuffled) == [to_piece(c) for c in chunks]


def check_pieces(case: Case, chunks: Sequence[Chunk]) -> None:
    """The index writes `chunk_pieces` rows; `chunk_chat` gives the same chunks as records."""
    with segment_cap(case.max_segment):
        pieces = chunk_pieces(searchable_rows(case.messages), case.chat, case.names, case.options)
    assert pieces == [to_piece(c) for c in chunks]
    assert [to_piece(to_chunk(p)) for p in pieces] == pieces


def check_append(case: Case, later: list[StoredMessage]) -> None:
    """Messages arriving after the last one change no chunk that does not hold the last
    message; none at all when they open a new segment or the tail window was already full."""
    ordered = in_time_order(case.messages)
    if not ordered:
        return
    o, last = case.options, ordered[-1]
    before = pieces_of(case)
    after = set(pieces_of(case, case.messages + later))
    for p in before:
        if last.rowid not in p.rowids:
            assert p in after
    n = len(spec_segments(ordered, o.gap_s, case.max_segment)[-1])
    arrived = in_time_order(later)
    closed = not arrived or arrived[0].ts - last.ts > o.gap_s or n == case.max_segment
    if closed or (n >= o.size and (n - o.size) % o.stride == 0):
        assert set(before) <= after


def check_tail_rechunk(case: Case, arrived: list[StoredMessage]) -> None:
    """What the incremental index does (`_plan_chat`): keep the chunks whose
    segment starts before `since`, the last segment start it stored; re-chunk only the rows
    from `since` on; trust that when the rows before `since` are exactly the kept chunks'
    rows (else it re-chunks the whole chat). Kept plus re-chunked must be a full re-chunk."""
    old = pieces_of(case)
    if not old:
        return
    since = max(p.segment_start for p in old)
    now = case.messages + arrived
    kept = [p for p in old if p.segment_start < since]
    before_since = {m.rowid for m in in_time_order(now) if m.ts < since}
    head_unchanged = {r for p in kept for r in p.rowids} == before_since
    if case.max_segment == MAX_SEGMENT:
        assert head_unchanged  # only a MAX_SEGMENT cut between two ties can upset it
    if not head_unchanged:
        return
    full = pieces_of(case, now)
    assert [p for p in full if p.segment_start < since] == kept
    tail = pieces_of(case, [m for m in now if m.ts >= since])
    assert tail == [p for p in full if p.segment_start >= since]


# --------------------------------------------------------------------------- the properties


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 60), size=st.integers(1, 12), data=st.data())
def test_window_bounds_are_anchored_strided_and_stop_at_the_first_reaching_the_end(
    n: int, size: int, data: st.DataObject
) -> None:
    stride = data.draw(st.integers(1, size))
    bounds = window_bounds(n, size, stride)
    if n == 0:
        assert bounds == []
        return
    assert [start for start, _ in bounds] == [k * stride for k in range(len(bounds))]
    assert all(end == min(start + size, n) for start, end in bounds)
    assert bounds[-1][1] == n  # the last message is in a window
    assert all(end < n for _, end in bounds[:-1])  # none lies wholly inside its predecessor


@PROPERTY
@given(case=cases(), data=st.data())
def test_chunks_of_a_chat_keep_the_spec(case: Case, data: st.DataObject) -> None:
    chunks = chunks_of(case)
    check_coverage(case, chunks)
    check_segments(case, chunks)
    check_windows(case, chunks)
    check_fields(case, chunks)
    check_members_hashed(case, chunks)
    check_order(case, chunks)
    check_input_order(case, chunks, data.draw(st.permutations(case.messages)))
    check_pieces(case, chunks)


@settings(PROPERTY, max_examples=80)
@given(case=cases(dense=True))
def test_the_char_cap_splits_overlapping_windows_greedily(case: Case) -> None:
    chunks = chunks_of(case)
    check_windows(case, chunks)
    check_order(case, chunks)
    check_fields(case, chunks)


@settings(PROPERTY, max_examples=100)
@given(case=cases(), data=st.data())
def test_new_messages_change_only_the_last_segment(case: Case, data: st.DataObject) -> None:
    """New messages from the last message on (an append), or from the last segment's start
    on (a late arrival inside the open segment): rowids above every stored one."""
    ordered = in_time_order(case.messages)
    old = pieces_of(case)
    if not old:
        return
    append = data.draw(st.booleans())
    start = ordered[-1].ts if append else max(p.segment_start for p in old)
    top = max(m.rowid for m in case.messages) + 1
    new = data.draw(messages_after(start, top, case.options.gap_s, max_size=12, undated=False))
    check_tail_rechunk(case, new)
    if append:
        check_append(case, new)


@settings(PROPERTY, max_examples=50)
@given(first=cases(max_size=20), second=cases(max_size=20))
def test_chats_chunked_in_turn_never_mix(first: Case, second: Case) -> None:
    """Chats are chunked one after another: no rows, names or settings of one show in the
    other's chunks, and chunking one never changes what the next call gives for another."""
    moved = [replace(m, rowid=m.rowid + 10**6, chat_id=8) for m in second.messages]
    other = replace(
        second,
        messages=moved,
        chat=replace(second.chat, id=8, name="Other"),
        names={"p_sam": "Samantha", "p_kim": "Kim"},
    )
    a = chunks_of(first)
    b = chunks_of(other)
    again = chunks_of(first)
    assert [to_piece(c) for c in again] == [to_piece(c) for c in a]
    for case, chunks in ((first, a), (other, b)):
        check_fields(case, chunks)
        rowids = {m.rowid for m in case.messages}
        assert all(set(c.rowids) <= rowids for c in chunks)
    assert not {c.id for c in a} & {c.id for c in b}


def test_a_segment_is_cut_at_max_segment_messages() -> None:
    """1,100 messages a second apart: segments of 512, 512 and 76, and a re-chunk from the
    last segment start reproduces the tail."""
    t0 = ANCHORS[0]
    messages = [
        StoredMessage(i, f"g{i}", 7, ME if i % 2 else "p_sam", t0 + i, f"m{i}")
        for i in range(1, 1101)
    ]
    chat = ChatInfo(7, "chat-guid", "Sam", False, ("p_sam",))
    pieces = [to_piece(c) for c in chunk_chat(messages, chat, NAMES, size=3, stride=1)]
    starts = sorted({p.segment_start for p in pieces})
    assert starts == [t0 + 1, t0 + 1 + MAX_SEGMENT, t0 + 1 + 2 * MAX_SEGMENT]
    cuts = (MAX_SEGMENT, 2 * MAX_SEGMENT)
    assert not any(p.rowids[0] <= cut < p.rowids[-1] for p in pieces for cut in cuts)
    tail = [to_piece(c) for c in chunk_chat(messages[2 * MAX_SEGMENT :], chat, NAMES)]
    assert tail == [p for p in pieces if p.segment_start == starts[-1]]
