"""Address normalisation, handle/chat loading and contact matching."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ingest.connect import open_chat_db
from ingest.contacts import load_contacts, match_contacts, merge_contacts
from ingest.handles import load_chats, load_handles, normalise_address, phone_digits_key
from ingest.records import Contact, Handle
from ingest.schema import Capabilities
from ingest.synthetic import Card, write_addressbook
from tests.paths import CHATDB_FIXTURES

URN = "urn:biz:2f8a6c1e-0000-4000-8000-000000000000"  # a Business Chat handle


@pytest.mark.parametrize(
    ("raw", "country", "expected"),
    [
        ("+14155550132", "us", "+14155550132"),
        ("(415) 555-0132", "us", "+14155550132"),
        ("415.555.0132", None, "+14155550132"),
        ("1-415-555-0132", "US", "+14155550132"),
        ("+1 (555) 867-5309", "us", "+15558675309"),
        ("17324475860", "us", "+17324475860"),
        (" 415 555 0132 ", "us", "+14155550132"),
        ("tel:+14155550132", "us", "+14155550132"),
        ("07700 900123", "gb", "+447700900123"),
        ("+44 (0)20 7946 0958", "us", "+442079460958"),
        ("020 7946 0958", "GB", "+442079460958"),
        ("+44 7700 900123", "gb", "+447700900123"),
        ("Alice.Smith@Example.COM", "us", "alice.smith@example.com"),
        ("<Bob@Example.com>", None, "bob@example.com"),
        ("mailto:Bob@Example.com", None, "bob@example.com"),
        ("Bob <BOB@example.com>", None, "bob@example.com"),
        ("12345", "us", "12345"),
        ("898287", "us", "898287"),
        ("AMAZON", "us", "AMAZON"),
        ("VERIZON-WIRELESS", "us", "VERIZON-WIRELESS"),
        ("555-1234", "us", "555-1234"),  # local-only: no invented +1 prefix
        (URN, "us", URN),
        ("", "us", ""),
    ],
)  # fmt: skip
def test_normalise_address(raw: str, country: str | None, expected: str) -> None:
    assert normalise_address(raw, country) == expected


def test_phone_digits_key() -> None:
    assert phone_digits_key("+14155550132") == "4155550132"
    assert phone_digits_key("+447700900123") == "7700900123"
    assert phone_digits_key("bob@example.com") is None
    assert phone_digits_key("12345") is None


def test_fixture_handles_and_chats() -> None:
    conn = open_chat_db(CHATDB_FIXTURES / "imessagedb" / "chat.db")
    handles = {h.rowid: h for h in load_handles(conn)}
    assert handles[935].address == "+17324475860"
    assert handles[935].country == "US"
    assert handles[2].address == handles[2].raw.lower()
    chats = {c.rowid: c for c in load_chats(conn, Capabilities.probe(conn))}
    assert chats[2].is_group is False and chats[2].handle_rowids == (2,)
    assert chats[1441].is_group is True and chats[1441].handle_rowids == (2, 935)
    assert chats[1441].display_name is None  # '' means no name
    assert chats[1441].guid.startswith("iMessage;+;")


def test_handles_without_optional_columns() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT NOT NULL)")
    conn.execute("INSERT INTO handle VALUES (5, '(415) 555-0132')")
    (handle,) = load_handles(conn)
    assert handle == Handle(rowid=5, address="+14155550132", raw="(415) 555-0132")


def _card(key: str, first: str, *, phones: tuple = (), emails: tuple = ()) -> Contact:
    return Contact(key=key, first=first, phones=phones, emails=emails)


def test_match_contacts_exact_fallback_and_person_centric_id() -> None:
    alice = _card("s:1", "Alice", phones=("+14155550132",), emails=("alice@example.com",))
    gb = _card("s:2", "Gareth", phones=("+444155550133",))  # typed without +1, parsed as UK
    twin_a = _card("s:3", "Twin A", phones=("+447700900124",))
    twin_b = _card("s:4", "Twin B", phones=("+337700900124",))
    handles = [
        Handle(1, "+14155550132", "+14155550132"),
        Handle(2, "alice@example.com", "alice@example.com"),
        Handle(3, "+14155550133", "+14155550133"),
        Handle(4, "+17700900124", "+17700900124"),  # last 10 digits match two cards
        Handle(5, "+19995550000", "+19995550000", person_centric_id="PC-1"),
        Handle(6, "carol@example.com", "carol@example.com", person_centric_id="PC-1"),
        Handle(7, "carol.work@example.com", "carol.work@example.com", person_centric_id="PC-1"),
        Handle(8, "12345", "12345"),
    ]
    carol = _card("s:5", "Carol", emails=("carol@example.com",))
    matched = match_contacts(handles, [alice, gb, twin_a, twin_b, carol])
    assert matched[1] is alice and matched[2] is alice
    assert matched[3] is gb
    assert 4 not in matched
    assert matched[5] is carol and matched[6] is carol and matched[7] is carol
    assert 8 not in matched


def test_merge_contacts_unions_shared_identifiers() -> None:
    a = Contact("A:2", first="Alice", phones=("+14155550132",))
    b = Contact("B:7", first="Alice", last="Smith", emails=("alice@example.com",),
                phones=("+14155550132",))  # fmt: skip
    c = Contact("B:8", nickname="Ally", emails=("alice@example.com", "ally@example.com"))
    d = Contact("A:3", first="Bob", phones=("+14155550199",))
    merged = merge_contacts([a, b, c, d])
    assert len(merged) == 2
    alice = next(m for m in merged if m.first == "Alice")
    assert alice.key == "A:2"
    assert (alice.last, alice.nickname) == ("Smith", "Ally")
    assert alice.phones == ("+14155550132",)
    assert set(alice.emails) == {"alice@example.com", "ally@example.com"}


def test_contacts_merge_across_sources(tmp_path: Path) -> None:
    book = tmp_path / "AddressBook"
    write_addressbook(book, [Card("Alice", "Smith", phones=("(415) 555-0132",)),
                             Card("Bob", phones=("415.555.0199",))], source="SRC-A")  # fmt: skip
    write_addressbook(book, [Card("Ali", nickname="Al", phones=("+1 415 555 0132",),
                                  emails=("Alice@Example.com",))], source="SRC-B")  # fmt: skip
    write_addressbook(book, [Card(None, organization="Acme Dental", phones=("212-555-0100",))],
                      source=None)  # fmt: skip
    contacts = load_contacts(book)
    assert len(contacts) == 3
    alice = next(c for c in contacts if c.first == "Alice")
    assert (alice.last, alice.nickname) == ("Smith", "Al")
    assert alice.phones == ("+14155550132",) and alice.emails == ("alice@example.com",)
    assert alice.key.startswith("SRC-A:")
    dentist = next(c for c in contacts if c.organization)
    assert dentist.display_name == "Acme Dental" and dentist.phones == ("+12125550100",)
    assert load_contacts(book / "Sources" / "SRC-B" / "AddressBook-v22.abcddb")[0].first == "Ali"


def test_contacts_bad_inputs_yield_nothing(tmp_path: Path) -> None:
    garbage = tmp_path / "AddressBook-v22.abcddb"
    garbage.write_bytes(b"definitely not sqlite " * 300)
    assert load_contacts(garbage) == []
    assert load_contacts(tmp_path) == []  # a folder holding only the garbage file
    assert load_contacts(tmp_path / "missing") == []
    assert load_contacts(None) == []
    other = tmp_path / "other.abcddb"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE unrelated (x)")
    conn.close()
    assert load_contacts(other) == []
