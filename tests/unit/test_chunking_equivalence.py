"""The fast chunker cuts exactly the chunks the old one did: ids, boundaries, texts, days and
content hashes. A difference would make every existing index re-chunk and re-embed."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from casper.chunking import ChunkOptions, chunk_chat, chunk_pieces, searchable_rows
from casper.records import ME, ChatInfo, StoredMessage
from tests import reference_chunker

ZONES = [None, "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"]
# around a spring-forward and a fall-back night in Berlin and New York, and a local midnight
ANCHORS = [
    datetime(2024, 3, 31, 0, 30, tzinfo=UTC).timestamp(),
    datetime(2024, 11, 3, 5, 30, tzinfo=UTC).timestamp(),
    datetime(2024, 6, 30, 21, 59, 59, tzinfo=UTC).timestamp(),
    1.0,  # the first seconds of 1970: negative local days west of UTC
]
TEXTS = ["hi", "", "   ", "\u00a0", "dinner at 8?", "寿司 🍣 tonight", "a\n\nb\tc", "x" * 700]
SENDERS = [ME, "p_sam", "p_alex", "p_unnamed"]
NAMES = {"p_sam": "Sam", "p_alex": "Alex", ME: "me"}


@st.composite
def histories(draw: st.DrawFn) -> list[StoredMessage]:
    anchor = draw(st.sampled_from(ANCHORS))
    n = draw(st.integers(0, 40))
    ts = anchor
    out = []
    for i in range(n):
        # same second, minutes, hours, and silences past the 6 h gap; now and then undated
        step = draw(st.sampled_from([0.0, 0.5, 59.9, 600.0, 3600.0, 7 * 3600.0, 26 * 3600.0]))
        ts += step
        when = 0.0 if draw(st.integers(0, 19)) == 0 else ts
        kind = draw(st.sampled_from(["text", "text", "text", "system", "attachment"]))
        out.append(
            StoredMessage(
                rowid=draw(st.integers(1, 10_000)) if i % 7 == 6 else 100 + i,
                guid=f"g{i}",
                chat_id=7,
                sender=draw(st.sampled_from(SENDERS)),
                ts=when,
                text=draw(st.sampled_from(TEXTS)),
                kind=kind,
            )  # fmt: skip
        )
    return draw(st.permutations(out))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=histories(),
    unit=st.sampled_from([(3, 1), (8, 4), (5, 2), (4, 4)]),
    max_chars=st.sampled_from([1500, 120, 40]),
    gap_s=st.sampled_from([6 * 3600.0, 1800.0]),
    zone=st.sampled_from(ZONES),
    members=st.sampled_from([("p_sam",), ("p_sam", "p_alex"), ()]),
)
def test_fast_chunker_matches_the_reference(
    messages: list[StoredMessage],
    unit: tuple[int, int],
    max_chars: int,
    gap_s: float,
    zone: str | None,
    members: tuple[str, ...],
) -> None:
    chat = ChatInfo(7, "guid", "Trip crew", len(members) > 1, members)
    keywords = dict(size=unit[0], stride=unit[1], gap_s=gap_s, max_chars=max_chars, tz_name=zone)
    expected = reference_chunker.chunk_chat(messages, chat, NAMES, **keywords)
    got = chunk_chat(messages, chat, NAMES, **keywords)
    assert got == expected
    assert [c.extra for c in got] == [c.extra for c in expected]  # extra is not compared by ==
    pieces = chunk_pieces(searchable_rows(messages), chat, NAMES, ChunkOptions(**keywords))
    assert [(p.id, p.content_hash) for p in pieces] == [(c.id, c.content_hash) for c in got]
