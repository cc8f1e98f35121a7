"""PURE: turn chat.db handles + AddressBook cards into people (one per card) and labelled chats.

Imports: stdlib, ingest.records, casper.records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from casper.records import ChatInfo, Person
from ingest.records import Chat, Contact, Handle

UNKNOWN_CHAT = ChatInfo(0, "", "Unknown chat", False, ())


def person_id_for(key: str) -> str:
    """A short id that is stable for the same card or handle across re-indexing."""
    return "p_" + hashlib.sha1(key.encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class Directory:
    """Who is who: people, each chat.db handle's person, and each person's card key."""

    people: tuple[Person, ...]
    handle_person: Mapping[int, str]  # handle ROWID → person id
    contact_keys: Mapping[str, str]  # person id → AddressBook card key
    owner: str | None = None  # the person who is the phone's owner (their own handle / card)


def build_directory(
    handles: Sequence[Handle],
    matches: Mapping[int, Contact],
    owner_addresses: Collection[str] = (),
) -> Directory:
    """One person per card (all its handles), else one per normalised address. The person
    holding one of `owner_addresses` (the owner texting themselves; their "me" card) is the
    owner: `Directory.owner`."""
    handle_person: dict[int, str] = {}
    names: dict[str, str] = {}
    forms: dict[str, tuple[tuple[str, str], ...]] = {}
    addresses: dict[str, set[str]] = {}
    keys: dict[str, str] = {}
    for h in handles:
        card = matches.get(h.rowid)
        key = f"card:{card.key}" if card else f"handle:{h.address}"
        pid = person_id_for(key)
        handle_person[h.rowid] = pid
        addresses.setdefault(pid, set()).add(h.address)
        if card:
            names[pid] = card.display_name or h.address
            forms[pid] = card.names
            addresses[pid].update(card.phones)
            addresses[pid].update(card.emails)
            keys[pid] = card.key
        else:
            names.setdefault(pid, h.address)
    people = tuple(
        Person(pid, names[pid], tuple(sorted(addresses[pid])), forms.get(pid, ()))
        for pid in sorted(names, key=lambda p: (names[p].lower(), p))
    )
    mine = set(owner_addresses)
    owners = [p.id for p in people if mine.intersection(p.handles)]
    # a card holds one person's addresses: two "owners" means the addresses are not telling
    return Directory(people, handle_person, keys, owners[0] if len(owners) == 1 else None)


def _members_label(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return names[0] if names else "Unnamed group"
    if len(names) <= 4:
        return ", ".join(names[:-1]) + " & " + names[-1]
    return ", ".join(names[:3]) + f" & {len(names) - 3} others"


def label_chats(chats: Sequence[Chat], directory: Directory) -> list[ChatInfo]:
    """Chats with person members and a human label (unnamed groups by their members)."""
    name_of = {p.id: p.name for p in directory.people}
    out = []
    for chat in chats:
        members = tuple(
            dict.fromkeys(
                directory.handle_person[h]
                for h in chat.handle_rowids
                if h in directory.handle_person
            )
        )
        if chat.display_name:
            label = chat.display_name
        else:
            label = (
                _members_label(sorted(name_of[m] for m in members)) if members else chat.identifier
            )
        out.append(ChatInfo(chat.rowid, chat.guid, label, chat.is_group, members))
    return out
