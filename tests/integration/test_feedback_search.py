"""The feedback pass the eval's `feedback` ablation searches with (eval.ablation): the best hits'
words find the answer the question's words miss; off with literal, in one-leg modes, and in
Casper's own search."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.index.chunk_index import ChunkIndex, Filter
from casper.indexer.chunk_update import update_index
from casper.records import ME, ChatInfo, Person, StoredMessage
from casper.search.retriever import Retriever
from casper.store.db import Store
from eval.ablation import AblationRetriever, Expanded
from tests.fakes_search import HashEmbedder
from tests.integration.test_index_search import OPTIONS, open_index, reader_for

T0 = 1_700_000_000.0
TALK = [
    ["we move on friday", "the new place has a backyard, a real backyard for the dogs"],
    ["the backyard is enormous", "room for a vegetable garden at last"],  # the answer
    *(
        [f"{topic} tonight", f"{topic} was {adj}"]
        for topic, adj in [
            ("pizza", "cheap"), ("football", "loud"), ("concert", "sold out"),
            ("homework", "endless"), ("laundry", "piling up"), ("traffic", "awful"),
            ("rain", "heavy"), ("podcast", "funny"), ("bakery", "closed"),
            ("printer", "broken"), ("marathon", "brutal"), ("chess", "tense"),
        ]
    ),
]  # fmt: skip


@pytest.fixture()
def index(tmp_path: Path) -> tuple[ChunkIndex, Store]:
    store = Store.open(tmp_path / "casper.sqlite")
    store.replace_people([Person("p_sam", "Sam", ("+15550001",))], {})
    chats = [ChatInfo(i, f"c{i}", f"chat {i}", False, ("p_sam",)) for i in range(len(TALK))]
    store.upsert_chats(chats)
    rows, rowid = [], 0
    for chat, lines in enumerate(TALK):
        for j, text in enumerate(lines):
            rowid += 1
            who = ME if j % 2 else "p_sam"
            rows.append(StoredMessage(rowid, f"g{rowid}", chat, who, T0 + chat * 86400 + j, text))
    store.upsert_messages(rows)
    embedder = HashEmbedder()
    idx = open_index(tmp_path / "index.lance", embedder)
    update_index(store, idx, embedder, dirty={c.id: True for c in chats}, options=OPTIONS)
    return idx, store


def with_feedback(idx: ChunkIndex, store: Store) -> AblationRetriever:
    base = Retriever(idx, HashEmbedder(), store=store, reader=reader_for(store))
    return AblationRetriever(base, feedback_terms=4)


def rank_of_answer(r: Retriever, **kw: object) -> int:
    hits = r.hits("when did I move", k=20, **kw)
    return [h.chat for h in hits].index("chat 1")


def test_the_best_hits_words_join_the_bm25_query_of_a_second_pass(
    index: tuple[ChunkIndex, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    idx, store = index
    calls: dict[str, list[object]] = {"fts": [], "vector": []}  # the windows' legs
    fts, vec = idx.fts_search, idx.vector_search

    def record(leg: str, query: object, where: Filter | None) -> None:
        if where is None or where.unit == "window":  # each message alone is searched too
            calls[leg].append(query)

    monkeypatch.setattr(idx, "fts_search", lambda q, n, w=None: record("fts", q, w) or fts(q, n, w))
    monkeypatch.setattr(
        idx, "vector_search", lambda v, n, w=None: record("vector", v, w) or vec(v, n, w)
    )
    r = with_feedback(idx, store)
    found = r.search("when did I move", k=20)
    hits, u = found.hits, found.understood
    assert isinstance(u, Expanded) and u.expansion[0] == "backyard"  # twice in the best hit
    expanded = f"move {' '.join(u.expansion)}"
    assert u.lexical == "move" and calls["fts"] == ["move", expanded]  # the first leg is reused
    assert len(calls["vector"]) == 1  # so is the vector leg
    assert "feedback" in found.timings
    answer = next(h for h in hits if h.chat == "chat 1")  # shares no word with the question
    bm25 = dict(fts(expanded, 20))
    assert answer.chunk_id in bm25 and answer.chunk_id not in dict(fts("move", 20))


def test_the_default_is_the_single_pass(index: tuple[ChunkIndex, Store]) -> None:
    idx, store = index
    plain = Retriever(idx, HashEmbedder(), store=store, reader=reader_for(store))
    found = plain.search("when did I move", k=20)
    assert not isinstance(found.understood, Expanded)
    assert "feedback" not in found.timings and found.hits[0].chat == "chat 0"


def test_literal_and_single_leg_searches_have_no_feedback_pass(
    index: tuple[ChunkIndex, Store],
) -> None:
    idx, store = index
    r = with_feedback(idx, store)
    for kw in ({"literal": True}, {"mode": "bm25"}, {"mode": "vector"}):
        if kw != {"mode": "bm25"}:
            rank_of_answer(r, **kw)
        found = r.search("when did I move", **kw)  # type: ignore[arg-type]
        assert not isinstance(found.understood, Expanded)
        assert "feedback" not in found.timings


def test_without_the_pass_the_ablation_searches_as_casper_does(
    index: tuple[ChunkIndex, Store],
) -> None:
    idx, store = index
    plain = Retriever(idx, HashEmbedder(), store=store, reader=reader_for(store))
    same = AblationRetriever(plain)
    for kw in ({}, {"literal": True}, {"mode": "bm25"}, {"mode": "vector"}):
        want = plain.search("when did I move", k=20, **kw)  # type: ignore[arg-type]
        got = same.search("when did I move", k=20, **kw)  # type: ignore[arg-type]
        assert got.hits == want.hits and got.understood == want.understood
