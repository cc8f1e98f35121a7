"""Every AddressBook name of a person, end to end: stored (and migrated into an older store),
read in questions (a nickname boosts that person's chats), used by the agent's tools, shown by
`casper contacts --json`; and the owner's own names (`me_names`) read as "me"."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from casper.agent.prefetch import named_person
from casper.agent.tools import Toolbox
from casper.app.runtime import make_reader
from casper.cli import app
from casper.config import Config
from casper.indexer.pipeline import Indexer
from casper.protocols import ToolCall
from casper.store.db import Store
from ingest.synthetic import build_tiny_corpus
from ingest.synthetic.cast import PEOPLE
from tests.fakes_search import HashEmbedder

UTC = ZoneInfo("UTC")
NOW = datetime(2024, 12, 1, tzinfo=UTC)
CARDS = {p.name: p.card for p in PEOPLE if p.card is not None}
runner = CliRunner()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return build_tiny_corpus(tmp_path_factory.mktemp("names") / "src")


@pytest.fixture()
def store(tiny, tmp_path: Path) -> Store:  # noqa: ANN001
    s = Store.open(tmp_path / "casper.sqlite")
    Indexer(s, tiny.chat_db, tiny.contacts, UTC).run()
    return s


def sam(store: Store):  # noqa: ANN201
    return next(p for p in store.people() if p.name == "Sam Rivera")


def test_every_name_on_the_card_is_stored(store: Store) -> None:
    card = CARDS["Sam Rivera"]
    assert dict(sam(store).names) == {
        "full": f"{card.first} {card.last}",
        "first": card.first,
        "last": card.last,
        "nickname": card.nickname,
    }
    dana = next(p for p in store.people() if p.name == "Dana Okafor")
    assert dict(dana.names)["organization"] == CARDS["Dana Okafor"].organization
    mom = next(p for p in store.people() if p.name == "Mom")
    assert mom.names == (("nickname", "Mom"),)  # a card with a nickname only
    bare = [p for p in store.people() if p.name.startswith("+")]  # Jordan: no card
    assert bare and all(p.names == () for p in bare)


def test_any_card_name_finds_the_person(store: Store) -> None:
    nickname = CARDS["Sam Rivera"].nickname
    assert nickname and store.resolve_person(nickname).id == sam(store).id
    assert store.resolve_person("rivera").id == sam(store).id  # case-insensitive, last name
    assert store.resolve_person("Okafor Design").name == "Dana Okafor"


def test_a_migrated_store_keeps_its_data_and_gets_names_on_the_next_index(
    tiny,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    s = Store.open(path)
    Indexer(s, tiny.chat_db, tiny.contacts, UTC).run()
    s.clear_dirty(s.dirty_chats())  # as if its search index had been written too
    before = (s.messages_total(), [(p.id, p.name, p.handles) for p in s.people()])
    # the store as the release before this migration wrote it
    s.conn.execute("DROP TABLE person_names")
    s.conn.execute("DELETE FROM _migrations WHERE name = '_m003_person_names'")
    s.conn.execute("DELETE FROM meta WHERE key = 'names_pending'")
    s.close()

    s = Store.open(path)  # migrates
    assert s.messages_total() == before[0]
    assert [(p.id, p.name, p.handles) for p in s.people()] == before[1]
    assert all(p.names == () for p in s.people()) and s.names_pending()
    report = Indexer(s, tiny.chat_db, tiny.contacts, UTC).run()  # nothing new in chat.db
    assert not report.noop  # ... but the names had to be read
    assert report.messages_new == 0 and s.messages_total() == before[0]
    assert dict(sam(s).names)["nickname"] == CARDS["Sam Rivera"].nickname
    assert not s.names_pending() and not s.dirty_chats()  # no chat re-chunked for it
    assert Indexer(s, tiny.chat_db, tiny.contacts, UTC).run().noop  # and then it is quiet


def test_a_nickname_in_a_question_boosts_that_persons_chats(store: Store) -> None:
    reader = make_reader(Config(data_dir=Path("/unused"), timezone="UTC"), store)
    nickname = CARDS["Sam Rivera"].nickname
    u = reader.read(f"What did {nickname} say about the park?", NOW)
    assert u.person_id == sam(store).id
    assert [p.said for p in u.people] == [nickname]
    assert nickname not in u.lexical  # the name is not a word to match
    # the same question without the card's names (display names only) finds nobody
    plain = make_reader(Config(data_dir=Path("/unused"), timezone="UTC"), store, aliases=False)
    assert plain.read(f"What did {nickname} say about the park?", NOW).people == ()


def test_the_owners_name_is_me_not_a_contact(store: Store) -> None:
    cfg = Config(data_dir=Path("/unused"), timezone="UTC", me_names=("Kevin",))
    u = make_reader(cfg, store).read("what did Kevin tell Sammy about dinner", NOW)
    assert u.me == ("Kevin",) and u.person_id == sam(store).id
    assert "Kevin" not in u.lexical and "Kevin" not in u.semantic
    assert u.semantic.startswith("what did I tell")


def test_agent_tools_know_every_name_and_the_owner(store: Store) -> None:
    calls: list[dict] = []

    def search(query: str, **kw: object) -> list:
        calls.append(kw)
        return []

    tools = Toolbox(store, search, UTC, me_names=("Kevin",))
    nickname = CARDS["Sam Rivera"].nickname
    assert tools.call(ToolCall("search_messages", {"query": "park", "person": nickname})).ok
    assert calls[-1]["person_id"] == sam(store).id
    assert tools.call(ToolCall("search_messages", {"query": "park", "person": "Kevin"})).ok
    assert calls[-1]["person_id"] is None  # the owner is in every chat: no filter
    stats = tools.call(ToolCall("get_contact_stats", {"person": "Kevin"}))
    assert not stats.ok and "the user" in stats.text
    listed = tools.call(ToolCall("list_contacts", {"name_like": nickname}))
    assert listed.text.startswith(f"Sam Rivera, also {nickname} (id {sam(store).id})")
    assert named_person(f"what did {nickname} say", store) == sam(store).id
    assert named_person("what did Sam Rivera say", store) == sam(store).id
    assert named_person("what did Kevin say", store, me_names=("Kevin",)) is None


@pytest.fixture()
def home(tiny, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: ANN001
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    monkeypatch.setattr(factory, "make_reranker", lambda cfg: (None, None))
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('me_names = ["Kevin"]\ntimezone = "UTC"\nrerank = false\n')
    args = ["index", "--home", str(home), "--chat-db", str(tiny.chat_db)]
    result = runner.invoke(app, [*args, "--contacts", str(tiny.contacts)])
    assert result.exit_code == 0, result.output
    return home


def test_contacts_json_lists_the_card_names(home: Path) -> None:
    result = runner.invoke(app, ["contacts", "--json", "--no-service", "--home", str(home)])
    people = {p["name"]: p for p in json.loads(result.stdout)}
    card = CARDS["Priya Natarajan"]
    assert people["Priya Natarajan"]["names"] == {
        "full": "Priya Natarajan",
        "first": card.first,
        "last": card.last,
        "nickname": card.nickname,
    }
    assert all(p["names"] == {} for name, p in people.items() if name.startswith("+"))


def test_search_reads_me_names_and_nicknames_end_to_end(home: Path) -> None:
    nickname = CARDS["Sam Rivera"].nickname
    asked = f"what did Kevin tell {nickname} about Dolores Park"
    result = runner.invoke(app, ["search", asked, "--json", "--no-service", "--home", str(home)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    understood = doc["understood"]
    assert understood["me"] == ["Kevin"]
    assert [p["name"] for p in understood["people"]] == ["Sam Rivera"]
    assert understood["people_use"] == "boosted"
    assert (
        "Kevin" not in understood["lexical_query"] and nickname not in understood["lexical_query"]
    )
    assert doc["hits"][0]["chat"] == "Sam Rivera"  # the Dolores Park plan is in Sam's chat


def test_ask_tells_the_model_who_the_owner_is(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import casper.backends.factory as factory
    from tests.fakes import ScriptedEngine

    engine = ScriptedEngine("I could not find it.")
    monkeypatch.setattr(factory, "make_engine", lambda cfg: engine)
    nickname = CARDS["Sam Rivera"].nickname
    question = f"what time did Kevin agree to meet {nickname} at Dolores Park?"
    result = runner.invoke(app, ["ask", question, "--json", "--no-service", "--home", str(home)])
    assert result.exit_code == 0, result.output
    system = engine.calls[0].messages[0].content
    assert 'own name is Kevin: "Kevin" in a question means the user' in system
    evidence = engine.calls[0].messages[1].content.split("\n\n")[1]  # the prefetch search
    # the first hit's chat, after the line that frames quoted messages as data
    from casper.agent.quoting import is_boundary

    lines = [line for line in evidence.splitlines() if not is_boundary(line)]
    assert lines[1].startswith("Sam Rivera (") and "Dolores Park" in evidence


def test_a_count_question_counts_the_contact_not_the_owner(store: Store) -> None:
    from casper.agent.enrich import enrich
    from casper.agent.scope import NO_FILTERS, within
    from casper.agent.stats_route import stats_answer

    question = f"How many messages did Sam send {CARDS['Priya Natarajan'].nickname}?"
    found = enrich(question, NOW, UTC)

    def counted(me_names: tuple[str, ...] = ()) -> str:
        person = named_person(question, store, me_names)
        return stats_answer(question, within(found, person, NO_FILTERS, {}), store, UTC) or ""

    assert "Priya" not in counted()  # Sam or Pri?
    answer = counted(me_names=("Sam",))  # the owner is Sam
    assert answer.startswith("With Priya Natarajan")
