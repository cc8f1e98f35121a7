"""Messages scored alone beside the windows: the message that answers ranks first in the
search's message ranking, the hit shows it with its neighbours, and the window legs never see
the single messages (their BM25 statistics stay the windows' own). Real store and LanceDB
index, fake embedder."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from casper.index.chunk_index import ChunkIndex, Filter
from casper.indexer.chunk_update import update_index
from casper.indexer.chunking import ChunkOptions, is_message_row
from casper.records import ME, ChatInfo, Person, StoredMessage
from casper.search.query import Reader
from casper.search.retriever import Retriever
from casper.store.db import Store
from tests.fakes_search import HashEmbedder

SAM, PRIYA = "p_sam", "p_priya"
CHATS = [ChatInfo(1, "c1", "Sam", False, (SAM,)), ChatInfo(2, "c2", "Priya", False, (PRIYA,))]
NOW = datetime(2024, 6, 1, 12, tzinfo=UTC)


def at(day: int, minute: int) -> float:
    return datetime(2024, 3, day, 12, minute, tzinfo=UTC).timestamp()


ROWS = [  # (chat, sender, when, text): one evening each, minutes apart
    (1, SAM, at(4, 0), "hey hows things"),
    (1, ME, at(4, 1), "good, long week"),
    (1, SAM, at(4, 2), "we finally signed up for the pottery class at the community centre"),
    (1, ME, at(4, 3), "oh nice"),
    (1, SAM, at(4, 4), "dinner on friday?"),
    (1, ME, at(4, 5), "sure"),
    (2, PRIYA, at(9, 0), "the class was cancelled again"),
    (2, ME, at(9, 1), "annoying"),
    (2, PRIYA, at(9, 2), "pottery next time maybe"),
]


def build(tmp_path: Path) -> tuple[Store, ChunkIndex]:
    store = Store.open(tmp_path / "casper.sqlite")
    store.replace_people([Person(SAM, "Sam", ("+1555",)), Person(PRIYA, "Priya", ("p@x.io",))], {})
    store.upsert_chats(CHATS)
    store.upsert_messages(
        [StoredMessage(i, f"g{i}", c, s, t, text) for i, (c, s, t, text) in enumerate(ROWS, 1)]
    )
    embedder = HashEmbedder()
    options = ChunkOptions(size=3, stride=1, tz_name="UTC", messages_alone=True)
    index = ChunkIndex.open(
        tmp_path / "index.lance", embedder_name=embedder.name, dim=embedder.dim,
        checksum=embedder.checksum, chunker_version=options.signature(),
    )  # fmt: skip
    update_index(store, index, embedder, dirty={c.id: True for c in CHATS}, options=options)
    return store, index


@pytest.fixture()
def built(tmp_path: Path) -> tuple[Store, ChunkIndex]:
    return build(tmp_path)


def test_the_window_legs_never_see_the_messages_alone(built: tuple[Store, ChunkIndex]) -> None:
    _, index = built
    windows = index.fts_search("pottery community", 50)
    alone = index.fts_search("pottery community", 50, Filter(unit="message"))
    assert windows and not any(is_message_row(cid) for cid, _ in windows)
    assert [cid for cid, _ in alone][:1] == ["1:3:3:msg"]
    assert all(is_message_row(cid) for cid, _ in alone)
    vec = HashEmbedder().embed_query("pottery class")
    assert not any(is_message_row(cid) for cid, _ in index.vector_search(vec, 50))
    found = index.vector_search(vec, 50, Filter(unit="message", chat_id=2))
    assert found and all(is_message_row(cid) and cid.startswith("2:") for cid, _ in found)


def test_the_window_legs_score_as_without_the_messages(
    built: tuple[Store, ChunkIndex], tmp_path: Path
) -> None:
    # BM25's statistics (document count, average length) are the windows' own: the messages
    # alone are another column's documents
    _, index = built
    scores = dict(index.fts_search("pottery class", 50))
    assert scores and np.isfinite(list(scores.values())).all()
    assert len(scores) == len({c for c in scores if not is_message_row(c)})


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])  # the fake embedder reads no meaning
def test_the_message_that_answers_ranks_first_and_is_shown_with_its_neighbours(
    built: tuple[Store, ChunkIndex], mode: str
) -> None:
    store, index = built
    reader = Reader(people=[(SAM, "Sam"), (PRIYA, "Priya")], tz=ZoneInfo("UTC"))
    retriever = Retriever(index, HashEmbedder(), store=store, reader=reader, by_message=True)
    found = retriever.search("pottery class at the community centre", k=3, mode=mode, now=NOW)  # type: ignore[arg-type]
    assert found.messages[0] == 3  # the message, not the first of its window
    first = found.hits[0]
    assert 3 in [m.rowid for m in first.messages] and len(first.messages) == 3
    # the hits the message leg chose hold what the windows' hits held: Priya's class too
    shown = {m.rowid for h in found.hits for m in h.messages}
    assert shown >= {3, 7, 9}


def test_without_the_setting_the_search_ranks_the_windows_alone(
    built: tuple[Store, ChunkIndex],
) -> None:
    # the default: the messages alone are not searched; the message ranking is the hits'
    store, index = built
    reader = Reader(people=[(SAM, "Sam"), (PRIYA, "Priya")], tz=ZoneInfo("UTC"))
    retriever = Retriever(index, HashEmbedder(), store=store, reader=reader)
    found = retriever.search("pottery class at the community centre", k=3, mode="bm25", now=NOW)
    assert not any(is_message_row(h.chunk_id) for h in found.hits)
    assert found.messages == tuple(dict.fromkeys(m.rowid for h in found.hits for m in h.messages))
    assert "by_message" not in found.timings


def test_the_settings_reach_the_chunker_and_the_search(
    built: tuple[Store, ChunkIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    # config.toml's messages_alone and named_day_after: the index is cut with them (its own
    # signature) and the search a command builds ranks by message and runs a named day on
    from casper.app import runtime
    from casper.config import Config

    store, index = built
    monkeypatch.setattr(runtime, "open_index", lambda cfg, embedder, **kw: index)
    monkeypatch.setattr(runtime, "_same_history", lambda index, store: None)
    on = Config(data_dir=Path("/unused"), timezone="UTC", messages_alone=True, named_day_after=2)
    off = Config(data_dir=Path("/unused"), timezone="UTC")
    assert (
        runtime.chunk_options(on).messages_alone and not runtime.chunk_options(off).messages_alone
    )
    made = runtime.make_retriever(on, store, embedder=HashEmbedder(), rerank=False)
    assert (made.by_message, made.days_after) == (True, 2)
    found = made.search("pottery class at the community centre", k=3, mode="bm25", now=NOW)
    assert found.messages[0] == 3
    default = runtime.make_retriever(off, store, embedder=HashEmbedder(), rerank=False)
    assert (default.by_message, default.days_after) == (False, 0)
