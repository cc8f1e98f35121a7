"""Rewrites add, never replace: the dates a question names as the event's (not the texts'), a
year before the history, a duration: each still finds the message when the reading of the
question would have scoped or stripped them away. Real store and LanceDB index, fake embedder."""

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

SAM, PRIYA = "p_sam", "p_priya"
CHATS = [ChatInfo(1, "c1", "Sam", False, (SAM,)), ChatInfo(2, "c2", "Priya", False, (PRIYA,))]
OPTIONS = ChunkOptions(size=3, stride=1)
NOW = datetime(2024, 6, 1, 12, tzinfo=UTC)


def at(month: int, day: int, hour: int = 12) -> float:
    return datetime(2024, month, day, hour, tzinfo=UTC).timestamp()


# (chat, sender, when, text): each its own chunk (a day apart, past the 6 h gap)
ROWS = [
    (2, PRIYA, at(1, 20), "booked flights!! lisbon the 10th of february"),
    (2, PRIYA, at(2, 10), "ugh the bus was late again"),  # the day named: other talk
    (2, ME, at(2, 10, 13), "no way, again?"),
    (2, PRIYA, at(3, 2), "pizza tonight?"),
    (1, SAM, at(4, 19), "that final in 2017, what a match"),
    (1, SAM, at(4, 21), "watched the match at the pub with the lads"),
    (1, ME, at(5, 3), "my back has been killing me for 4 days"),
    (1, SAM, at(5, 6), "the pub quiz is on thursday"),
]


@pytest.fixture()
def searcher(tmp_path: Path) -> Retriever:
    store = Store.open(tmp_path / "casper.sqlite")
    store.replace_people([Person(SAM, "Sam", ("+1555",)), Person(PRIYA, "Priya", ("p@x.io",))], {})
    store.upsert_chats(CHATS)
    store.upsert_messages(
        [StoredMessage(i, f"g{i}", c, s, t, text) for i, (c, s, t, text) in enumerate(ROWS, 1)]
    )
    embedder = HashEmbedder()
    index = ChunkIndex.open(
        tmp_path / "index.lance", embedder_name=embedder.name, dim=embedder.dim,
        checksum=embedder.checksum, chunker_version=chunker_signature(3, 1, 6 * 3600, 1500),
    )  # fmt: skip
    update_index(store, index, embedder, dirty={c.id: True for c in CHATS}, options=OPTIONS)
    people = [(p.id, p.name) for p in store.people()]
    coverage = (datetime(2024, 1, 20).date(), datetime(2024, 5, 6).date())
    reader = Reader(people=people, tz=ZoneInfo("UTC"), coverage=coverage)
    # a handful of candidates per leg, as 50 are of a real history: a scope's vector hit
    # matches only when it would have been one
    return Retriever(index, HashEmbedder(), store=store, reader=reader, candidates=3)


def first_text(r: Retriever, question: str, **options: object) -> str:
    hits = r.hits(question, now=NOW, k=3, **options)
    return hits[0].messages[0].text if hits else ""


def test_the_day_of_an_event_finds_the_message_that_planned_it(searcher: Retriever) -> None:
    # the 10th of February holds other talk (the scope): the plan was texted in January
    question = "Where is Priya going on the 10th of February?"
    found = searcher.search(question, now=NOW, k=3, mode="bm25")
    assert found.understood.date_terms == ("md0210",)
    assert "lisbon" in found.hits[0].messages[0].text
    # hybrid: the fake embedder finds the day's talk as close as the plan; both lead
    hits = searcher.search(question, now=NOW, k=3).hits
    assert any("lisbon" in h.messages[0].text for h in hits[:2])


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_a_year_before_the_history_is_no_scope_and_its_mention_is_found(
    searcher: Retriever, mode: str
) -> None:
    found = searcher.search("What match did Sam watch in 2017?", now=NOW, mode=mode)  # type: ignore[arg-type]
    assert found.understood.date_outside
    assert "final in 2017" in found.hits[0].messages[0].text


def test_a_duration_in_the_question_scopes_nothing(searcher: Retriever) -> None:
    found = searcher.search("When did I have back pain for 4 days?", now=NOW, mode="bm25")
    assert found.understood.date_range is None
    assert "killing me for 4 days" in found.hits[0].messages[0].text
