"""REALTALK → one history per owner's phone: grouping, evidence, the chat.db and AddressBook
written, and the ambiguous variant's owner card (recognised as the owner at ingest)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import ingest
from casper.errors import CasperError
from casper.indexer.people import build_directory
from eval import realtalk
from ingest.schema import Capabilities


def _talk(owner: str, contact: str, day: int) -> dict[str, Any]:
    s1 = [
        {"clean_text": f"Hey {contact}!", "speaker": owner,
         "date_time": f"{day:02d}.01.2024, 10:00:00", "dia_id": "D1:1", "img_file": []},
        {"clean_text": "I went skiing today", "speaker": contact,
         "date_time": f"{day:02d}.01.2024, 10:05:00", "dia_id": "D1:2",
         "img_file": ["1-PHOTO.jpg", "1-PHOTO_opt.jpg"], "blip_caption": "snow"},
        {"clean_text": "nice!", "speaker": owner, "date_time": f"{day:02d}.01.2024, 10:06:00",
         "dia_id": "D1:4", "img_file": []},
    ]  # fmt: skip
    qa = [
        {"question": f"When did {contact} go skiing?", "answer": "x", "evidence": ["D1:2"],
         "category": 2},
        {"question": "q", "answer": "y", "evidence": ["D1:2. D1:4", "D1:3"], "category": 1},
    ]  # fmt: skip
    return {"name": {"speaker_1": owner, "speaker_2": contact}, "session_1": s1,
            "session_1_date_time": "x", "events_session_1": [], "qa": qa}  # fmt: skip


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    for name, (owner, contact, day) in {
        "Chat_1_A_B": ("Ana", "bea", 3), "Chat_2_C_B": ("Cy", "bea", 4),
        "Chat_3_A_D": ("Ana", "Dov", 5),
    }.items():  # fmt: skip
        (tmp_path / f"{name}.json").write_text(json.dumps(_talk(owner, contact, day)))
    return tmp_path


def test_conversations_are_grouped_into_one_phone_per_owner(folder: Path) -> None:
    phones = realtalk.load_phones(folder)
    assert [(p.owner, [t.key for t in p.talks]) for p in phones] == [
        ("Ana", ["Chat_1_A_B", "Chat_3_A_D"]), ("Cy", ["Chat_2_C_B"])]  # fmt: skip
    assert [realtalk.phone_half(phones, p) for p in phones] == ["tune", "report"]
    q = phones[0].questions
    assert q[0].category == "temporal" and q[1].category == "spread"
    assert len(q[1].relevant) == 2  # "D1:2. D1:4" is two ids; D1:3 is not in the chat
    assert phones[0].talks[0].dropped_evidence == ("D1:3",)


def test_a_missing_folder_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(CasperError, match="no REALTALK"):
        realtalk.load_phones(tmp_path)


def test_a_phone_is_one_chat_db_and_address_book(folder: Path, tmp_path: Path) -> None:
    phone = realtalk.load_phones(folder)[0]
    chat_db, contacts = realtalk.write_phone(phone, tmp_path / "plain")
    conn = sqlite3.connect(chat_db)
    assert conn.execute("SELECT count(*) FROM chat").fetchone()[0] == 2
    rows = conn.execute("SELECT guid, is_from_me, text FROM message ORDER BY date").fetchall()
    assert len(rows) == 6 and rows[0][1] == 1  # the owner's "Hey bea!" first
    assert rows[1][0] == realtalk.message_guid("Chat_1_A_B", "D1:2")
    attached = conn.execute("SELECT count(*) FROM message_attachment_join").fetchone()[0]
    assert attached == 2  # one photo each (the _opt copy is not a second one), no caption
    assert "snow" not in " ".join(r[2] for r in rows)
    cards = ingest.load_contacts(contacts)
    assert sorted(c.first or "" for c in cards) == ["Bea", "Dov"]


def test_the_ambiguous_phone_has_the_owners_card_a_namesake_and_a_name_on_no_card(
    folder: Path, tmp_path: Path
) -> None:
    phone = realtalk.load_phones(folder)[0]
    chat_db, contacts = realtalk.write_phone(phone, tmp_path / "amb", ambiguous=True)
    cards = ingest.load_contacts(contacts)
    firsts = sorted(c.first or "" for c in cards)
    assert firsts.count("Ana") == 2 and "Bea" in firsts and "Dov" not in firsts
    conn = sqlite3.connect(f"file:{chat_db}?mode=ro", uri=True)
    caps = Capabilities.probe(conn)
    mine = ingest.load_owner_addresses(conn, caps)
    assert mine == {"ana@realtalk.invalid"}
    handles = ingest.load_handles(conn)
    directory = build_directory(handles, ingest.match_contacts(handles, cards), mine)
    owner = next(p for p in directory.people if p.id == directory.owner)
    assert owner.name.startswith("Ana ") and "ana@realtalk.invalid" in owner.handles
    namesake = conn.execute(
        "SELECT count(*) FROM message m JOIN handle h ON m.handle_id = h.ROWID "
        "WHERE h.id LIKE '%namesake%'"
    ).fetchone()[0]
    assert namesake > 10  # the namesake texts: their chat is not empty
