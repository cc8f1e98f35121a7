"""A named day is where a conversation starts: with `named_day_after` = 2, the messages of the
next two days rank with it (people answer the next day; an evening runs into the next day),
softly — never a filter — while an explicit --since/--until stays exact. Real store and LanceDB
index, fake embedder."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from casper.index.chunk_index import ChunkIndex
from casper.indexer.chunk_update import update_index
from casper.indexer.chunking import ChunkOptions, chunker_signature
from casper.records import ME, ChatInfo, Person, StoredMessage
from casper.search.query import Reader
from casper.search.retriever import Retriever
from casper.store.db import Store
from tests.fakes_search import HashEmbedder

PRIYA = "p_priya"
NOW = datetime(2024, 6, 1, 12, tzinfo=UTC)


def at(day: int, hour: int) -> float:
    return datetime(2024, 2, day, hour, tzinfo=UTC).timestamp()


ROWS = [  # (sender, when, text): each its own passage (more than 6 hours apart)
    (PRIYA, at(10, 19), "dinner at the new place tonight?"),
    (ME, at(11, 10), "that ramen last night was unreal"),  # the answer, written the day after
    (PRIYA, at(14, 12), "ramen ramen ramen, same place again?"),  # three days after: not it
    (ME, at(20, 9), "did you see the match"),
]


@pytest.fixture()
def searcher(tmp_path: Path) -> Retriever:
    store = Store.open(tmp_path / "casper.sqlite")
    store.replace_people([Person(PRIYA, "Priya", ("p@x.io",))], {})
    store.upsert_chats([ChatInfo(1, "c1", "Priya", False, (PRIYA,))])
    store.upsert_messages(
        [StoredMessage(i, f"g{i}", 1, s, t, text) for i, (s, t, text) in enumerate(ROWS, 1)]
    )
    embedder = HashEmbedder()
    index = ChunkIndex.open(
        tmp_path / "index.lance", embedder_name=embedder.name, dim=embedder.dim,
        checksum=embedder.checksum, chunker_version=chunker_signature(3, 1, 6 * 3600, 1500),
    )  # fmt: skip
    options = ChunkOptions(size=3, stride=1, tz_name="UTC")
    update_index(store, index, embedder, dirty={1: True}, options=options)
    coverage = (datetime(2024, 2, 10).date(), datetime(2024, 2, 20).date())
    reader = Reader(people=[(PRIYA, "Priya")], tz=ZoneInfo("UTC"), coverage=coverage)
    return Retriever(index, HashEmbedder(), store=store, reader=reader, days_after=2)


def texts(r: Retriever, question: str, **options: object) -> list[str]:
    hits = r.hits(question, now=NOW, **options)
    return [m.text for h in hits for m in h.messages]


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_the_day_after_a_named_day_ranks_with_it(searcher: Retriever, mode: str) -> None:
    found = texts(searcher, "What ramen did we have on 10 February?", mode=mode)
    # the next day's answer leads the other ramen message (which repeats the word three times)
    assert found.index("that ramen last night was unreal") < found.index(
        "ramen ramen ramen, same place again?"
    )


def test_days_further_on_are_not_pulled_in_but_still_found(searcher: Retriever) -> None:
    found = texts(searcher, "What ramen did we have on 10 February?", mode="bm25")
    assert "ramen ramen ramen, same place again?" in found  # soft: ranked after, never dropped


def test_an_explicit_range_stays_exact(searcher: Retriever) -> None:
    since = datetime(2024, 2, 10, tzinfo=UTC).timestamp()
    until = datetime(2024, 2, 11, tzinfo=UTC).timestamp()
    found = texts(searcher, "ramen", since=since, until=until)
    assert "that ramen last night was unreal" not in found
    assert all("ramen" not in t for t in found)
