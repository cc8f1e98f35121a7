"""A person read wrongly costs rank, never the answer: a name on another contact's card leads
with that contact's chats, but the best hits of the search without them stay in the first ten;
a name shared by the owner and a contact narrows nothing and says so. Real store and LanceDB
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

ELISE, KATE = "p_elise", "p_kate"
CHATS = [
    ChatInfo(1, "c1", "Elise", False, (ELISE,)),
    ChatInfo(2, "c2", "Kate Okafor", False, (KATE,)),
]
OPTIONS = ChunkOptions(size=3, stride=1)
NOW = datetime(2024, 6, 1, 12, tzinfo=UTC)
EVIDENCE = "kate you have to see the modern art museum, I visited it on sunday"


def at(day: int, hour: int = 12) -> float:
    return datetime(2024, 3, day, hour, tzinfo=UTC).timestamp()


def rows() -> list[tuple[int, str, float, str]]:
    """Elise tells the owner (whom she calls Kate, a name on no card of theirs) about a museum;
    a cousin whose card says Kate texts about many things, one chunk a day."""
    out = [(1, ELISE, at(1), EVIDENCE), (1, ME, at(1, 13), "oh nice, which one?")]
    words = """dinner market cinema gym park lunch train brunch walk swim party drinks football
        shop picnic quiz concert coffee match garden bike beach tennis bowling karaoke bakery"""
    days = zip(range(2, 28), words.split(), strict=True)
    out += [(2, KATE, at(d), f"kate here, the {w} plan for saturday is on") for d, w in days]
    return out


@pytest.fixture()
def searcher(tmp_path: Path) -> Retriever:
    store = Store.open(tmp_path / "casper.sqlite")
    people = [Person(ELISE, "Elise", ("e@x.io",)), Person(KATE, "Kate Okafor", ("k@x.io",))]
    store.replace_people(people, {})
    store.upsert_chats(CHATS)
    store.upsert_messages(
        [StoredMessage(i, f"g{i}", c, s, t, text) for i, (c, s, t, text) in enumerate(rows(), 1)]
    )
    embedder = HashEmbedder()
    index = ChunkIndex.open(
        tmp_path / "index.lance", embedder_name=embedder.name, dim=embedder.dim,
        checksum=embedder.checksum, chunker_version=chunker_signature(3, 1, 6 * 3600, 1500),
    )  # fmt: skip
    update_index(store, index, embedder, dirty={c.id: True for c in CHATS}, options=OPTIONS)
    reader = Reader(people=[(p.id, p.name) for p in store.people()], me_names=("Emi",),
                    tz=ZoneInfo("UTC"))  # fmt: skip
    return Retriever(index, HashEmbedder(), store=store, reader=reader)


def texts(r: Retriever, question: str, **options: object) -> list[str]:
    return [m.text for h in r.hits(question, now=NOW, k=10, **options) for m in h.messages]


def test_a_name_read_as_the_wrong_contact_keeps_the_best_hits_in_the_first_ten(
    searcher: Retriever,
) -> None:
    question = "When did Kate visit the modern art museum?"
    found = searcher.search(question, now=NOW, k=10, mode="bm25")
    assert found.understood.person_id == KATE  # read as the cousin: her chats lead
    assert EVIDENCE in texts(searcher, question, mode="bm25")
    assert EVIDENCE in texts(searcher, question)  # hybrid too
    # searched as typed it is the first hit: the reading may cost rank, not the message
    assert texts(searcher, question, mode="bm25", literal=True)[0] == EVIDENCE


def test_the_owners_name_on_a_contacts_card_narrows_nothing_and_says_so(tmp_path: Path) -> None:
    reader = Reader(people=[("p_emi", "Emi Lindqvist"), (ELISE, "Elise")], me_names=("Emi",))
    u = reader.read("When did Emi visit the museum?", NOW)
    assert u.person_id is None and u.scope_dates is None
    assert "Emi: 2 people, not narrowed" in u.summary()
    assert u.to_json()["ambiguous"] == [{"said": "Emi", "people": 2}]
    full = reader.read("When did Emi Lindqvist visit the museum?", NOW)
    assert full.person_id == "p_emi" and not full.ambiguous  # the full name is one person


def test_the_owners_own_card_is_the_owner_not_a_contact(tmp_path: Path) -> None:
    from casper.app.runtime import make_reader, me_names
    from casper.config import load_config

    store = Store.open(tmp_path / "casper.sqlite")
    owner = Person("p_me", "Emi Okafor", ("emi@x.io",), (("first", "Emi"), ("full", "Emi Okafor")))
    store.replace_people([owner, Person(ELISE, "Elise", ("e@x.io",))], {}, "p_me")
    cfg = load_config(tmp_path / "home")
    found = store.owner()
    assert found is not None and found.id == "p_me"
    assert set(me_names(cfg, store)) == {"Emi", "Emi Okafor"}
    u = make_reader(cfg, store).read("What did Emi Okafor tell Elise?", NOW)
    assert u.person_id == ELISE and u.me == ("Emi Okafor",)  # never a scope of its own
    store.replace_people([owner], {})  # no owner found this time: nobody is
    assert store.owner() is None and me_names(cfg, store) == ()
