"""Who is who in an ingest run: one person per AddressBook card (or bare handle), chats
labelled with them, and each person's 1:1 chats (their stats are counted over those).

Imports: ingest, casper.store, casper.indexer.people, casper.records. Split from
`casper.indexer.pipeline` (the run's control flow stays there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import ingest
from casper.errors import CasperError
from casper.indexer.exclude import Exclusions, resolve, stored_bound
from casper.indexer.people import UNKNOWN_CHAT, Directory, build_directory, label_chats
from casper.records import ChatInfo
from casper.store.db import Store

if TYPE_CHECKING:
    import sqlite3


def people_and_chats(
    store: Store,
    conn: sqlite3.Connection,
    caps: ingest.Capabilities,
    contacts_path: Path | None,
    contacts_sig: str,
    exclude: Sequence[str] = (),
) -> tuple[Directory, list[ChatInfo], bool, Exclusions]:
    """People (one per AddressBook card) and labelled chats, saved; True if names changed;
    what `exclude` names (casper.indexer.exclude). The people and chats it names are left out
    of what is saved and returned (their handles still map to them, so their rows are known
    and dropped), and so are their names from the labels of the groups they are in."""
    handles = ingest.load_handles(conn)
    contacts = ingest.load_contacts(contacts_path)
    if not contacts and contacts_path is not None:
        _refuse_to_drop_names(store.named_people(), contacts_path)
    owner = ingest.load_owner_addresses(conn, caps)
    directory = build_directory(handles, ingest.match_contacts(handles, contacts), owner)
    raw_chats = ingest.load_chats(conn, caps)
    excluded = (
        resolve(exclude, directory.people, label_chats(raw_chats, directory), stored_bound(store))
        if exclude
        else Exclusions()
    )
    labelling = directory
    if excluded.people:
        kept = tuple(p for p in directory.people if p.id not in excluded.people)
        directory = replace(directory, people=kept)
        labelling = replace(directory, handle_person={
            h: p for h, p in directory.handle_person.items() if p not in excluded.people
        })  # fmt: skip
    people_changed = store.get_meta("contacts_sig") != contacts_sig or {
        p.id: p.name for p in store.people()
    } != {p.id: p.name for p in directory.people}
    store.replace_people(directory.people, dict(directory.contact_keys), directory.owner)
    chats = [c for c in label_chats(raw_chats, labelling) if c.id not in excluded.chats]
    store.upsert_chats([*chats, UNKNOWN_CHAT])
    return directory, chats, people_changed, excluded


def _refuse_to_drop_names(named: int, contacts: Path) -> None:
    """An AddressBook that cannot be read must not silently turn every named person into a
    bare number with a new id (and re-index everything, twice): stop, unless asked to."""
    if named:
        raise CasperError(
            f"cannot read the AddressBook at {contacts}; indexing without it would drop the "
            f"names of {named} people",
            hint="pass --contacts with the AddressBook folder or .abcddb file (Full Disk Access "
            "is needed for ~/Library), or --no-contacts to index without names on purpose",
        )


def one_to_one_chats(chats: list[ChatInfo]) -> dict[str, list[int]]:
    """person id → the ids of their 1:1 chats."""
    out: dict[str, list[int]] = {}
    for chat in chats:
        if not chat.is_group and len(chat.members) == 1:
            out.setdefault(chat.members[0], []).append(chat.id)
    return out
