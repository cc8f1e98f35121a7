"""What an `exclude` entry names (casper.indexer.exclude.resolve): a person by any name on
their card, a handle however it is written, a chat by its name; and which rows that drops."""

from __future__ import annotations

from casper.indexer.exclude import Exclusions, is_handle, resolve
from casper.records import ChatInfo, Person
from ingest.records import Message

SAM = Person("p_sam", "Sam Rivera", ("+14155550132", "sam.rivera@example.com"),
             (("first", "Sam"), ("last", "Rivera"), ("nickname", "Sammy")))  # fmt: skip
PATEL = Person("p_patel", "Sam Patel", ("+15105550186",), (("first", "Sam"), ("last", "Patel")))
MOM = Person("p_mom", "Mom", ("+16175550143",), (("nickname", "Mom"),))
JORDAN = Person("p_jordan", "+13125550177", ("+13125550177",))
PEOPLE = (SAM, PATEL, MOM, JORDAN)
CHATS = (
    ChatInfo(1, "g1", "Sam Rivera", False, ("p_sam",)),
    ChatInfo(2, "g2", "Mom", False, ("p_mom",)),
    ChatInfo(3, "g3", "Climbing crew", True, ("p_sam", "p_mom")),
    ChatInfo(4, "g4", "+13125550177", False, ("p_jordan",)),
)


def _ids(*entries: str) -> tuple[set[str], set[int]]:
    found = resolve(entries, PEOPLE, CHATS)
    return set(found.people), set(found.chats)


def test_a_person_by_any_name_on_their_card() -> None:
    assert _ids("Mom") == ({"p_mom"}, {2})
    assert _ids("sammy") == ({"p_sam"}, {1})
    assert _ids("RIVERA") == ({"p_sam"}, {1})
    assert _ids("Sam") == ({"p_sam", "p_patel"}, {1})  # every card with that name
    assert _ids("Sa") == (set(), set())  # a whole name, not a prefix


def test_a_handle_however_it_is_written() -> None:
    assert _ids("+1 312 555 0177") == ({"p_jordan"}, {4})
    assert _ids("(312) 555-0177") == ({"p_jordan"}, {4})
    assert _ids("Sam.Rivera@Example.com") == ({"p_sam"}, {1})
    assert _ids("415-555-0132") == ({"p_sam"}, {1})
    assert is_handle("+44 20 7946 0958") and not is_handle("Mom") and not is_handle("R2D2")


def test_a_chat_by_its_name_and_what_names_nothing() -> None:
    assert _ids("chat:climbing crew") == (set(), {3})
    assert _ids("chat: Climbing crew ") == (set(), {3})
    found = resolve(["chat:Book club", "Grandpa", "Mom"], PEOPLE, CHATS)
    assert found.named == (("chat:Book club", ()), ("Grandpa", ()), ("Mom", ("Mom",)))
    assert not resolve(["Grandpa"], PEOPLE, CHATS)


def _msg(chat: int, handle: int, mine: bool) -> Message:
    return Message(1, "g", chat, handle, mine, 0.0, "hi")


def test_which_rows_are_dropped() -> None:
    handle_person = {10: "p_mom", 11: "p_sam"}
    mom = Exclusions(frozenset({"p_mom"}), frozenset({2}))
    assert mom.drops(_msg(2, 10, True), handle_person)  # my side of her 1:1 chat
    assert mom.drops(_msg(3, 10, False), handle_person)  # her messages in a group
    assert not mom.drops(_msg(3, 0, True), handle_person)  # mine in that group stay
    assert not mom.drops(_msg(3, 11, False), handle_person)  # and Sam's
    crew = Exclusions(frozenset(), frozenset({3}))
    assert crew.drops(_msg(3, 11, False), handle_person) and crew.drops(_msg(3, 0, True), {})


def test_doctor_lists_entries_whom_they_name_and_what_is_pending(tmp_path) -> None:  # noqa: ANN001
    from casper.app.doctor_privacy import privacy_checks
    from casper.config import load_config
    from casper.indexer.exclude import Purged, remember
    from casper.store.db import Store

    (tmp_path / "config.toml").write_text('privacy = "aggregate"\nexclude = ["Mom", "Grandpa"]\n')
    cfg = load_config(tmp_path)
    store = Store.open(cfg.store_path)
    try:
        remember(store, ["Mom"], resolve(["Mom"], PEOPLE, CHATS), Purged(messages=3), dropped=2)
        privacy, pending = privacy_checks(cfg)
        assert (
            privacy["detail"].startswith("aggregate: ")
            and "never a message's text" in (privacy["detail"])
        )
        assert (
            pending["status"] == "warn"
            and "the index was built keeping out Mom" in (pending["detail"])
        )  # config.toml says more than the index has applied: run `casper index`
        found = resolve(["Mom", "Grandpa"], PEOPLE, CHATS)
        remember(store, ["Mom", "Grandpa"], found, Purged(), dropped=0)
        _, kept = privacy_checks(cfg)
        assert kept["status"] == "warn"  # Grandpa names nobody
        assert kept["detail"].startswith("Mom (Mom); Grandpa (names nobody)")
        assert "5 of their rows removed" not in kept["detail"]  # a new set of entries
    finally:
        store.close()
