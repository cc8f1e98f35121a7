"""Real SQLite store + real LanceDB index with fake models: indexing, filters, CJK, mismatch."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pytest

from casper.errors import CasperError, DataDamaged, IndexMismatch, IndexMissing
from casper.index.chunk_index import ChunkIndex, Filter
from casper.index.files import TABLE
from casper.index.lexical import SIDECAR, RankBM25Index, tokenize
from casper.index.vectors import EXACT_MAX, ChunkMeta, VectorMatrix
from casper.indexer.chunk_update import update_index
from casper.indexer.chunking import (
    ChunkOptions,
    chunker_signature,
    index_pieces,
    searchable_rows,
)
from casper.records import ME, ChatInfo, Person, StoredMessage, is_message_row
from casper.search.query import Reader
from casper.search.retriever import SEARCH_TRIES, Retriever
from casper.store.db import Store
from tests.fakes_search import HashEmbedder, OverlapReranker

UNIT = {"size": 8, "stride": 4}  # these tests are written around 8-message windows
# each message alone beside the windows: the incremental updates keep both units true
OPTIONS = ChunkOptions(**UNIT, messages_alone=True)
SIG = OPTIONS.signature()
SAM, ALEX = "p_sam", "p_alex"
CHATS = [
    ChatInfo(1, "c1", "Sam", False, (SAM,)),
    ChatInfo(2, "c2", "Alex", False, (ALEX,)),
    ChatInfo(3, "c3", "Trip crew", True, (SAM, ALEX)),
]


def ts(month: int, day: int = 1, hour: int = 12) -> float:
    return datetime(2024, month, day, hour, tzinfo=UTC).timestamp()


def conversation() -> list[StoredMessage]:
    rows: list[tuple[int, str, float, str]] = [
        (1, SAM, ts(1), "are we still on for dinner friday"),
        (1, ME, ts(1) + 60, "yes dinner at the noodle place"),
        (1, SAM, ts(1) + 120, "my dentist appointment moved to monday"),
        (1, ME, ts(1) + 180, "ugh dentist again, good luck"),
        (2, ALEX, ts(3), "dinner plans this weekend?"),
        (2, ME, ts(3) + 60, "昨日は寿司を食べた"),
        (2, ALEX, ts(3) + 120, "🍣 again? lucky"),
        (2, ME, ts(3) + 180, ""),
        (3, SAM, ts(5), "group dinner for the trip"),
        (3, ALEX, ts(5) + 60, "I booked the hotel in Lisbon"),
        (3, ME, ts(5) + 120, "great, dinner on the first night then"),
    ]
    out = [
        StoredMessage(i, f"guid-{i}", chat, sender, t, text)
        for i, (chat, sender, t, text) in enumerate(rows, start=1)
    ]
    out.append(StoredMessage(99, "guid-99", 1, ME, ts(1) + 240, "", kind="system", event="x"))
    return out


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "casper.sqlite")
    s.replace_people([Person(SAM, "Sam", ("+15550001",)), Person(ALEX, "Alex", ("a@x.io",))], {})
    s.upsert_chats(CHATS)
    s.upsert_messages(conversation())
    return s


def open_index(path: Path, embedder: HashEmbedder, **kw: object) -> ChunkIndex:
    return ChunkIndex.open(
        path, embedder_name=embedder.name, dim=embedder.dim, checksum=embedder.checksum,
        chunker_version=SIG, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.fixture()
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture()
def index(tmp_path: Path, store: Store, embedder: HashEmbedder) -> ChunkIndex:
    idx = open_index(tmp_path / "index.lance", embedder)
    update_index(store, idx, embedder, dirty={c.id: True for c in CHATS}, options=OPTIONS)
    return idx


def retriever(index: ChunkIndex, store: Store, **kw: object) -> Retriever:
    return Retriever(index, HashEmbedder(), store=store, **kw)  # type: ignore[arg-type]


def chat_of(chunk_id: str) -> int:
    return int(chunk_id.split(":")[0])


def units(index: ChunkIndex) -> tuple[int, int]:
    """(windows, messages alone) in the index."""
    ids = index.scan(["id"])["id"].to_pylist()
    alone = sum(1 for i in ids if is_message_row(i))
    return len(ids) - alone, alone


def expected_rows(store: Store, chat: ChatInfo) -> dict[str, str]:
    """id → content hash of every row a full re-chunk of `chat` writes."""
    rows = searchable_rows(store.chat_messages(chat.id))
    return {p.id: p.content_hash for p in index_pieces(rows, chat, store.names(), OPTIONS)}


def test_index_then_hybrid_search_returns_hits_with_store_messages(
    index: ChunkIndex, store: Store
) -> None:
    assert units(index) == (3, 10)  # three windows and each searchable message alone
    hits = retriever(index, store).hits("dentist appointment")
    top = hits[0]
    assert top.chat == "Sam" and top.participants == ("Sam", "me")
    assert [m.sender for m in top.messages] == ["Sam", "me", "Sam", "me"]
    assert top.messages[2].text == "my dentist appointment moved to monday"
    assert top.messages[2].guid == "guid-3" and top.start == ts(1)


LEG_NAMES = ["vector", "fts", "rank-bm25"]


def leg(index: ChunkIndex, name: str, flt: Filter | None) -> list[str]:
    if name == "vector":
        return [i for i, _ in index.vector_search(HashEmbedder().embed_query("dinner"), 10, flt)]
    if name == "fts":
        return [i for i, _ in index.fts_search("dinner", 10, flt)]
    return [i for i, _ in RankBM25Index(index).search("dinner", 10, flt)]


@pytest.mark.parametrize("name", LEG_NAMES)
def test_filters_apply_inside_every_leg(index: ChunkIndex, name: str) -> None:
    assert {chat_of(i) for i in leg(index, name, None)} == {1, 2, 3}
    assert {chat_of(i) for i in leg(index, name, Filter(person_id=ALEX))} == {2, 3}
    assert {chat_of(i) for i in leg(index, name, Filter(person_id=SAM))} == {1, 3}
    assert {chat_of(i) for i in leg(index, name, Filter(chat_id=2))} == {2}
    assert {chat_of(i) for i in leg(index, name, Filter(since=ts(2), until=ts(4)))} == {2}
    assert {chat_of(i) for i in leg(index, name, Filter(since=ts(4)))} == {3}
    assert {chat_of(i) for i in leg(index, name, Filter(person_id=SAM, until=ts(2)))} == {1}
    assert leg(index, name, Filter(person_id="p_nobody")) == []


@pytest.mark.parametrize(
    ("query", "guid"), [("寿司", "guid-6"), ("🍣", "guid-7"), ("寿司 🍣", "guid-6")]
)
@pytest.mark.parametrize(
    ("mode", "lexical"), [("bm25", "lancedb"), ("hybrid", "lancedb"), ("bm25", "rank-bm25")]
)
def test_cjk_and_emoji_queries_find_their_message(
    index: ChunkIndex, store: Store, query: str, guid: str, mode: str, lexical: str
) -> None:
    hits = retriever(index, store, lexical=lexical).hits(query, mode=mode)  # type: ignore[arg-type]
    assert hits and guid in {m.guid for m in hits[0].messages}
    assert hits[0].chat == "Alex"


def test_cjk_leg_respects_filters(index: ChunkIndex) -> None:
    assert index.ngram_search("寿司", 5)
    assert index.ngram_search("寿司", 5, Filter(person_id=SAM)) == []
    assert index.ngram_search("plain words", 5) == []
    assert "寿" in tokenize("昨日は寿司") and "寿司" in tokenize("昨日は寿司")


def test_search_modes_filters_and_timings(index: ChunkIndex, store: Store) -> None:
    r = retriever(index, store)
    for mode in ("hybrid", "bm25", "vector"):
        hits = r.hits("dinner", mode=mode, person_id=ALEX)
        assert hits and {h.chat for h in hits} <= {"Alex", "Trip crew"}
    found = r.search("dinner")
    assert {"embed", "vector", "lexical", "fuse", "fetch", "total"} <= set(found.timings)
    assert set(r.search("dinner", mode="bm25").timings) & {"embed", "vector"} == set()
    assert r.hits("dinner", k=1) and len(r.hits("dinner", k=1)) == 1
    assert r.hits("dinner", since=ts(12)) == []


def test_rerank_reorders_fused_candidates(index: ChunkIndex, store: Store) -> None:
    reranker = OverlapReranker()
    r = Retriever(index, HashEmbedder(), reranker, store=store)
    found = r.search("hotel Lisbon booked")
    hits = found.hits
    assert hits[0].chat == "Trip crew" and hits[0].score == pytest.approx(1.0)
    assert reranker.calls and "rerank" in found.timings
    calls = len(reranker.calls)
    plain = r.search("hotel Lisbon booked", rerank=False)
    assert len(reranker.calls) == calls and "rerank" not in plain.timings
    assert all(0.0 <= h.score <= 1.0 for h in plain.hits)  # fused: a weighted sum of [0, 1]s


class TiedReranker:
    """Gives every candidate the same score: the reranker has no opinion."""

    def score(self, query: str, texts: list[str]) -> list[float]:
        return [0.5] * len(texts)


@pytest.mark.parametrize("get_order", ["as asked", "reversed"])
def test_reranker_ties_keep_the_fused_order(
    index: ChunkIndex, store: Store, monkeypatch: pytest.MonkeyPatch, get_order: str
) -> None:
    r = Retriever(index, HashEmbedder(), TiedReranker(), store=store)  # type: ignore[arg-type]
    fused = [h.chunk_id for h in r.hits("hotel Lisbon booked", rerank=False)]
    table = [row["id"] for row in index.scan(["id"]).to_pylist()]
    assert len(fused) > 1 and fused != [c for c in table if c in fused]  # orders differ
    if get_order == "reversed":  # a fetch that returns rows in its own order, not the asked one
        get = index.get
        monkeypatch.setattr(index, "get", lambda ids: list(reversed(get(ids))))
    assert [h.chunk_id for h in r.hits("hotel Lisbon booked")] == fused


def add_messages(store: Store, chat_id: int, start_rowid: int, texts: list[str], t0: float) -> None:
    store.upsert_messages(
        StoredMessage(start_rowid + i, f"guid-{start_rowid + i}", chat_id, SAM, t0 + 60 * i, text)
        for i, text in enumerate(texts)
    )


def test_reindex_embeds_only_new_chunks_and_finds_new_message(
    index: ChunkIndex, store: Store, embedder: HashEmbedder
) -> None:
    embedder.calls.clear()
    nothing = update_index(store, index, embedder, dirty={}, options=OPTIONS)
    assert nothing.embedded == 0 and embedder.embedded == 0 and nothing.chunks_total == 13
    add_messages(store, 1, 200, ["zeppelin tickets!", "for saturday", "bring snacks"], ts(1, 1, 13))
    update = update_index(store, index, embedder, dirty={1: False}, options=OPTIONS)
    # the chat's partial 4-message window grows into a 7-message one: one new id, one gone;
    # and the three new messages alone
    assert update.chunks_new == 4 and update.embedded == 4 and update.chunks_deleted == 1
    assert embedder.embedded == 4
    hits = retriever(index, store).hits("zeppelin")
    assert "guid-200" in {m.guid for m in hits[0].messages}
    again = update_index(store, index, embedder, dirty={1: False, 2: False}, options=OPTIONS)
    assert again.embedded == 0 and again.chunks_new == 0


def test_incremental_updates_match_a_full_rechunk(
    index: ChunkIndex, store: Store, embedder: HashEmbedder
) -> None:
    for n in range(6):  # grow one segment past several windows, one message at a time
        add_messages(store, 1, 300 + n, [f"update {n}"], ts(1) + 300 + 60 * n)
        update_index(store, index, embedder, dirty={1: False}, options=OPTIONS)
    add_messages(store, 1, 400, ["much later"], ts(2))  # a new segment after a long gap
    update_index(store, index, embedder, dirty={1: False}, options=OPTIONS)
    add_messages(store, 1, 500, ["late arrival from the past"], ts(1) + 30)  # older than tail
    update_index(store, index, embedder, dirty={1: False}, options=OPTIONS)
    assert index.ids_for_chat(1) == expected_rows(store, CHATS[0])


def test_deleted_message_disappears_after_full_reindex(
    index: ChunkIndex, store: Store, embedder: HashEmbedder
) -> None:
    store.delete_messages(["guid-3"])
    update = update_index(store, index, embedder, dirty={1: True}, options=OPTIONS)
    # same first/last rowid, so the same id with new content: re-embedded in place; the
    # message alone is gone
    assert update.embedded == 1 and update.chunks_new == 0 and update.chunks_deleted == 1
    assert index.get(["1:1:4:8x4"])[0].rowids == (1, 2, 4)
    hits = retriever(index, store).hits("appointment monday", mode="bm25")
    assert all("guid-3" not in {m.guid for m in h.messages} for h in hits)


def test_rank_bm25_sidecar_is_reused_until_the_index_changes(
    index: ChunkIndex, store: Store, embedder: HashEmbedder
) -> None:
    assert RankBM25Index(index).refresh() is True
    assert (index.dir / SIDECAR).exists()
    assert RankBM25Index(index).refresh() is False
    add_messages(store, 2, 600, ["kayak rental"], ts(3) + 600)
    update_index(store, index, embedder, dirty={2: False}, options=OPTIONS)
    fresh = RankBM25Index(index)
    assert fresh.refresh() is True
    assert fresh.search("kayak", 3)[0][0].startswith("2:")


def test_model_mismatch_and_missing_index(tmp_path: Path, index: ChunkIndex) -> None:
    with pytest.raises(IndexMismatch) as info:
        open_index(index.dir, HashEmbedder(dim=32))
    assert "rebuild" in (info.value.hint or "")
    with pytest.raises(IndexMismatch):
        ChunkIndex.open(index.dir, embedder_name="other-model", dim=64, checksum="hash",
                        chunker_version=SIG)  # fmt: skip
    with pytest.raises(IndexMismatch):
        ChunkIndex.open(index.dir, embedder_name="hash-64", dim=64, checksum="hash",
                        chunker_version=chunker_signature(3, 1, 6 * 3600, 1500))  # fmt: skip
    with pytest.raises(IndexMissing):
        open_index(tmp_path / "nowhere.lance", HashEmbedder(), create=False)
    fresh = open_index(index.dir, HashEmbedder(dim=32), reset=True)
    assert fresh.count() == 0 and fresh.dim == 32


def test_index_files_are_owner_only(index: ChunkIndex) -> None:
    RankBM25Index(index).refresh()
    paths = [index.dir, *index.dir.rglob("*")]
    loose = [p for p in paths if stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert not loose, loose[:3]


def test_empty_index_searches_return_nothing(tmp_path: Path, store: Store) -> None:
    idx = open_index(tmp_path / "empty.lance", HashEmbedder())
    r = retriever(idx, store)
    for mode in ("hybrid", "bm25", "vector"):
        assert r.hits("dinner", mode=mode) == []
    assert Retriever(idx, HashEmbedder(), lexical="rank-bm25").hits("x", mode="bm25") == []


def matrix_of(vectors: np.ndarray, chats: np.ndarray) -> VectorMatrix:
    n = len(vectors)
    people = [[f"p{c % 7}"] for c in chats]
    meta = pa.table({
        "id": [f"c{i}" for i in range(n)], "chat_id": chats.astype(np.int64),
        "chat_name": [f"chat {c}" for c in chats], "participants": [["me"]] * n,
        "person_ids": pa.array(people, pa.list_(pa.string())),
        "start": np.arange(n, dtype=np.float64), "end": np.arange(n, dtype=np.float64) + 0.5,
        "rowids": pa.array([[i] for i in range(n)], pa.list_(pa.int64())),
    })  # fmt: skip
    return VectorMatrix.build(meta, vectors, version=0)


def test_binary_rescoring_path_matches_exact_search_and_filters() -> None:
    rng = np.random.default_rng(0)
    n, dim = 3 * EXACT_MAX, 96
    centroids = rng.standard_normal((200, dim))
    vecs = centroids[rng.integers(0, 200, n)] + 0.7 * rng.standard_normal((n, dim))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    matrix = matrix_of(vecs, rng.integers(0, 50, n))
    queries = vecs[rng.integers(0, n, 20)] + 0.05 * rng.standard_normal((20, dim))
    recalls = []
    for q in queries.astype(np.float32):
        q = q / np.linalg.norm(q)
        exact = {f"c{i}" for i in np.argsort(-(vecs @ q))[:10]}
        got = matrix.search(q, 10)
        recalls.append(len(exact & {cid for cid, _ in got}) / 10)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert np.mean(recalls) >= 0.95
    broad = Filter(person_id="p3", since=100.0)  # ~1/7 of the rows: still the binary path
    mask = matrix.mask(broad)
    assert mask is not None and int(mask.sum()) > EXACT_MAX // 4
    hits = matrix.search(queries[0].astype(np.float32), 50, mask)
    rows = [int(cid[1:]) for cid, _ in hits]
    assert len(hits) == 50 and all(mask[r] for r in rows)
    assert matrix.meta(["c5"])["c5"] == ChunkMeta("c5", int(matrix.filters.chat_ids[5]),
                                                   f"chat {matrix.filters.chat_ids[5]}", ("me",),
                                                   5.0, 5.5, (5,))  # fmt: skip


def test_vector_cache_is_reused_on_reopen_and_never_mapped(
    index: ChunkIndex, embedder: HashEmbedder
) -> None:
    query = embedder.embed_query("dinner")
    first = index.vector_search(query, 5)
    cache = list(index.dir.glob("vectors-*.npy"))
    assert cache
    reopened = open_index(index.dir, embedder)
    assert reopened.vector_search(query, 5) == first
    assert list(index.dir.glob("vectors-*.npy")) == cache  # read from the cache, not rebuilt
    # the float16 rows are read into buffers, never mapped: no page of them stays resident
    mapped = Path("/proc/self/maps")
    if mapped.exists():
        assert not [line for line in mapped.read_text().splitlines() if "vectors-" in line]


def reader_for(store: Store, **kw: object) -> Reader:
    people = [(p.id, p.name) for p in store.people()]
    return Reader(people=people, tz=ZoneInfo("UTC"), **kw)  # type: ignore[arg-type]


def test_a_date_in_the_question_ranks_that_time_first(index: ChunkIndex, store: Store) -> None:
    r = Retriever(index, HashEmbedder(), store=store, reader=reader_for(store))
    now = datetime(2024, 12, 1, tzinfo=UTC)
    found = r.search("what did we say about dinner in May 2024?", now=now)
    hits = found.hits
    assert hits[0].chat == "Trip crew"  # the only dinner talk in May
    assert found.understood.date_range is not None
    assert "May" not in found.understood.lexical
    assert {h.chat for h in hits} > {"Trip crew"}  # a boost, not a filter: the rest follows
    hits = r.hits("dinner on 03/01/2024", now=now)  # en_US: March 1st
    assert hits[0].chat == "Alex"
    literal = r.search("dinner on 03/01/2024", now=now, literal=True)
    assert literal.understood.literal and literal.understood.date_range is None


def test_a_person_with_nothing_on_the_day_named_still_leads(
    index: ChunkIndex, store: Store
) -> None:
    # Sam wrote nothing on March 1st (Alex's dinner talk is that day): a misread or wrong date
    # must not leave the question unscoped, Sam's chats still come first
    r = Retriever(index, HashEmbedder(), store=store, reader=reader_for(store))
    now = datetime(2024, 12, 1, tzinfo=UTC)
    for mode in ("hybrid", "vector", "bm25"):
        found = r.search(
            "What did Sam say about dinner plans this weekend on 03/01/2024?", now=now, mode=mode
        )  # type: ignore[arg-type]
        hits, understood = found.hits, found.understood
        assert understood.person_id == SAM
        assert understood.date_unmatched
        assert understood.to_json()["dates"]["use"] == "nothing with them then, not used"
        assert {h.chat for h in hits[:2]} == {"Sam", "Trip crew"}, mode
        assert hits[-1].chat == "Alex"  # the rest follows
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    understood = r.search("What did Alex say about dinner on 03/01/2024?", now=now).understood
    assert not understood.date_unmatched  # said per search: nothing left from the one before
    assert understood.to_json()["dates"]["use"] == "boosted"


def test_a_weak_word_match_inside_a_scope_stays_weak(
    index: ChunkIndex, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inside Sam's chats the only word match is a weak one (BM25 1.0 where the whole index's
    # best is 10.0). Scaled on the scope's own range it would count as a perfect match and
    # outrank the passage the vector leg puts first; scaled on the unscoped range it stays weak.
    ids = {chat_of(cid): cid for cid in index.scan(["id"])["id"].to_pylist()}
    sam, alex, trip = ids[1], ids[2], ids[3]

    def inside(where: Filter | None, leg: list[tuple[str, float]]) -> list[tuple[str, float]]:
        if where is None or where.person_id is None:
            return leg
        return [(cid, s) for cid, s in leg if chat_of(cid) in (1, 3)]  # Sam's chats

    vector = [(alex, 0.9), (sam, 0.8), (trip, 0.2)]
    words = [(alex, 10.0), (trip, 1.0)]
    monkeypatch.setattr(index, "vector_search", lambda q, n, where=None: inside(where, vector))
    monkeypatch.setattr(index, "fts_search", lambda q, n, where=None: inside(where, words))
    hits = retriever(index, store, reader=reader_for(store)).hits("What did Sam say?", k=3)
    assert [chat_of(h.chunk_id) for h in hits] == [1, 3, 2]


def test_a_named_contact_is_boosted_and_left_out_of_bm25(index: ChunkIndex, store: Store) -> None:
    r = Retriever(index, HashEmbedder(), store=store, reader=reader_for(store))
    found = r.search("When did Sam mention the dentist?", mode="bm25")
    assert found.understood.person_id == SAM
    assert found.understood.lexical == "mention the dentist"
    assert found.hits[0].chat == "Sam"
    me = Retriever(index, HashEmbedder(), store=store, reader=reader_for(store, me_names=["Sam"]))
    read = me.search("When did Sam mention the dentist?", mode="bm25").understood
    assert read.me == ("Sam",)
    assert read.person_id is None


def test_rrf_stays_available_for_the_ablation(index: ChunkIndex, store: Store) -> None:
    convex = Retriever(index, HashEmbedder(), store=store)
    rrf = Retriever(index, HashEmbedder(), store=store, fuse="rrf")
    a, b = convex.hits("dinner", k=3), rrf.hits("dinner", k=3)
    assert {h.chunk_id for h in a} and {h.chunk_id for h in b}
    legs = [[("x", 0.9), ("y", 0.1)], [("y", 5.0)]]
    assert rrf._fuse(legs, "hybrid") == [("y", 1 / 62 + 1 / 61), ("x", 1 / 61)]  # k = 60
    assert convex._fuse(legs, "hybrid")[0][0] == "y"
    with pytest.raises(ValueError):
        Retriever(index, HashEmbedder(), store=store, fuse="max")


def test_a_lexical_search_reads_only_the_hits_meta_and_matches_the_matrix(
    index: ChunkIndex, store: Store, tmp_path: Path, embedder: HashEmbedder
) -> None:
    cold = open_index(tmp_path / "index.lance", embedder)
    hits = retriever(cold, store).hits("dentist appointment", mode="bm25", rerank=False)
    assert hits and cold._matrix is None  # no meta of every chunk for a lexical search
    ids = [h.chunk_id for h in hits] + ["no-such-id"]
    assert cold.chunk_meta(ids) == index.matrix().meta(ids)
    assert cold._matrix is None


def test_incremental_updates_over_several_chat_groups_match_a_full_rechunk(
    index: ChunkIndex, store: Store, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import casper.indexer.chunk_update as indexing

    monkeypatch.setattr(indexing, "PLAN_CHATS", 1)  # read each chat's rows between writes
    for chat in CHATS:
        add_messages(store, chat.id, 600 + chat.id, [f"news for chat {chat.id}"], ts(3))
    store.delete_messages(["guid-3"])
    update_index(store, index, embedder, dirty={1: True, **{c.id: False for c in CHATS[1:]}},
                 options=OPTIONS)  # fmt: skip
    for chat in CHATS:
        assert index.ids_for_chat(chat.id) == expected_rows(store, chat)


def test_the_stores_chunker_rows_are_the_searchable_messages(store: Store) -> None:
    blanks = ["", "   ", "\u00a0", "\n\t", "\u2003kept\u2003"]
    add_messages(store, 1, 700, blanks, ts(4))
    store.upsert_messages(
        [StoredMessage(710, "guid-710", 1, SAM, ts(4) + 1, "renamed", kind="system")]
    )
    for chat in CHATS:
        for since in (None, ts(4)):
            expected = searchable_rows(store.chat_messages(chat.id, since_ts=since))
            assert store.searchable_rows(chat.id, since_ts=since) == expected
    assert [r[3] for r in store.searchable_rows(1, since_ts=ts(4))] == ["\u2003kept\u2003"]


def test_a_generation_that_never_settles_ends_in_an_error_not_a_recursion(
    index: ChunkIndex, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that saw the index move to another generation runs again, a bounded number of
    times: an index that moves during every try (published nonstop, or damaged so that every
    read reopens it) ends in an error that names it and what to do."""
    r = retriever(index, store)
    fts, tries = index.fts_search, []

    def moving(query: str, n: int, where: Filter | None = None) -> list[tuple[str, float]]:
        index.publish_vectors()  # another generation while the search runs, every time
        return fts(query, n, where)

    monkeypatch.setattr(index, "fts_search", moving)
    refresh = index.refresh_if_stale
    monkeypatch.setattr(index, "refresh_if_stale", lambda: tries.append(1) or refresh())
    with pytest.raises(CasperError) as info:
        r.search("dinner")
    assert len(tries) == SEARCH_TRIES
    assert str(index.dir) in info.value.message
    assert "casper index --rebuild" in (info.value.hint or "")


def test_a_damaged_text_index_is_named_not_searched_around(
    index: ChunkIndex, store: Store, embedder: HashEmbedder
) -> None:
    """The other legs alone would answer less without saying so: the search names
    the damaged index and the fix."""
    text_fts = next(ix.index_uuid for ix in index.table.list_indices() if ix.name == "text_idx")
    folder = index.dir / f"{TABLE}.lance" / "_indices" / text_fts
    for part in folder.iterdir():
        part.write_bytes(b"not an index")
    reader = open_index(index.dir, embedder)  # as the next process opens it
    with pytest.raises(DataDamaged) as info:
        Retriever(reader, HashEmbedder(), store=store).search("dinner")
    assert str(folder) in info.value.message and "text_idx" in info.value.message
    assert "casper index --rebuild" in (info.value.hint or "")


def test_a_search_keeps_nothing_of_itself_on_the_retriever(index: ChunkIndex, store: Store) -> None:
    """One retriever serves every request of a service: the reranker, the reading of the query,
    notices and timings travel in the call and its result."""
    reranker = OverlapReranker()
    r = Retriever(index, HashEmbedder(), store=store)
    before = dict(vars(r))
    ranked = r.search("hotel Lisbon booked", reranker=reranker)
    assert reranker.calls and "rerank" in ranked.timings
    assert ranked.hits[0].score == pytest.approx(1.0)  # the reranker's score
    assert "rerank" not in r.search("hotel Lisbon booked").timings  # none of its own
    assert not r.search("hotel Lisbon booked", reranker=reranker, rerank=False).timings.get(
        "rerank"
    )
    assert vars(r) == before
