"""Store queries about people and chats (a mixin of `Store`): resolving names, handles, ids.

Imports: sqlite3 (through the store's connection), casper.records, casper.errors.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence

from casper.errors import AmbiguousChat, AmbiguousPerson, ChatNotFound, PersonNotFound
from casper.records import ME, ChatInfo, Person

NAME_KINDS = ("full", "first", "last", "nickname", "organization")  # the order they are listed
PHONE_LIKE = re.compile(r"[+\d\s().\-]+")  # a phone number as people write one, nothing else


class DirectoryQueries:
    """People and chats; expects `self.conn` and `self._names` from `Store`."""

    conn: sqlite3.Connection
    _names: dict[str, str] | None

    # ---- people --------------------------------------------------------------------------
    def replace_people(
        self, people: Sequence[Person], contact_keys: dict[str, str], owner: str | None = None
    ) -> None:
        """Rewrite people and their handles (cheap: a personal address book is small); `owner`
        is the person who is the phone's owner (their own handle or "me" card), if any."""
        self.conn.execute("DELETE FROM people")
        self.conn.execute("DELETE FROM handles")
        self.conn.executemany(
            "INSERT INTO people(id, name, contact_key) VALUES (?, ?, ?)",
            [(p.id, p.name, contact_keys.get(p.id)) for p in people],
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO handles(address, person_id) VALUES (?, ?)",
            [(h, p.id) for p in people for h in p.handles],
        )
        self.conn.execute("DELETE FROM person_names")
        self.conn.executemany(
            "INSERT OR IGNORE INTO person_names(person_id, kind, name) VALUES (?, ?, ?)",
            [(p.id, kind, name) for p in people for kind, name in p.names],
        )
        self.conn.execute("DELETE FROM meta WHERE key = 'names_pending'")
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('owner_person', ?)", (owner or "",)
        )
        self._names = None

    def owner(self) -> Person | None:
        """The person who is the phone's owner (their own handle, their "me" card), if known."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'owner_person'").fetchone()
        return self.person(row[0]) if row and row[0] else None

    def names_pending(self) -> bool:
        """True until the people are re-read after the migration that added their names."""
        row = self.conn.execute("SELECT 1 FROM meta WHERE key = 'names_pending'").fetchone()
        return row is not None

    def named_people(self) -> int:
        """How many people have their name from an AddressBook card."""
        return self.conn.execute(
            "SELECT count(*) FROM people WHERE contact_key IS NOT NULL"
        ).fetchone()[0]

    def people(self) -> list[Person]:
        handles: dict[str, list[str]] = {}
        for address, pid in self.conn.execute("SELECT address, person_id FROM handles"):
            handles.setdefault(pid, []).append(address)
        forms: dict[str, list[tuple[str, str]]] = {}
        order = "CASE kind " + " ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(NAME_KINDS))
        for pid, kind, name in self.conn.execute(
            f"SELECT person_id, kind, name FROM person_names ORDER BY person_id, {order} END, name"
        ):
            forms.setdefault(pid, []).append((kind, name))
        rows = self.conn.execute("SELECT id, name FROM people ORDER BY name COLLATE NOCASE")
        return [
            Person(pid, name, tuple(sorted(handles.get(pid, []))), tuple(forms.get(pid, ())))
            for pid, name in rows
        ]

    def person(self, person_id: str) -> Person | None:
        return next((p for p in self.people() if p.id == person_id), None)

    def names(self) -> dict[str, str]:
        """person id → display name (plus ME → "me")."""
        if self._names is None:
            self._names = dict(self.conn.execute("SELECT id, name FROM people").fetchall())
            self._names[ME] = "me"
        return self._names

    def find_people(self, query: str) -> list[Person]:
        """People whose id, handle or name matches: exact matches win over partial ones."""
        exact, partial = self.people_matching(query)
        return exact or partial

    def people_matching(self, query: str) -> tuple[list[Person], list[Person]]:
        """(exact, partial) matches of a name, handle or id. A number matches a handle by its
        last digits only when the query is a phone number and nothing else: a group's label
        such as "+13125550177, Alex Chen & Priya" holds one, and names no one."""
        q = query.strip().lower()
        if not q:
            return [], []
        people = self.people()
        digits = "".join(ch for ch in q if ch.isdigit())
        phone = len(digits) >= 7 and PHONE_LIKE.fullmatch(q) is not None
        exact = [
            p
            for p in people
            if q == p.id.lower()
            or q in (n.lower() for n in p.name_forms())  # "Sam Rivera", "Sammy", "Rivera"
            or q in (h.lower() for h in p.handles)
            or (phone and any(h.endswith(digits[-10:]) for h in p.handles))
        ]
        words = q.split()
        partial = [
            p
            for p in people
            if any(
                all(any(part.startswith(w) for part in form.split()) for w in words) or q in form
                for form in (n.lower() for n in p.name_forms())
            )
        ]
        return exact, partial

    def resolve_person(self, query: str) -> Person:
        """Exactly one person for a name, handle or id; otherwise an error listing candidates
        (and, when the name is a chat's label, the option that opens that chat)."""
        found = self.find_people(query)
        if not found:
            labelled = self.chats_labelled(query)
            hint = None
            if len(labelled) == 1:
                hint = f"'{query}' is a chat's name: --chat {labelled[0].id}"
            raise PersonNotFound(f"no contact matches '{query}'", hint=hint)
        if len(found) > 1:
            raise AmbiguousPerson(query, [(p.id, p.name) for p in found])
        return found[0]

    # ---- chats ---------------------------------------------------------------------------
    def upsert_chats(self, chats: Iterable[ChatInfo]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO chats(id, guid, name, is_group, members) VALUES (?,?,?,?,?)",
            [(c.id, c.guid, c.name, int(c.is_group), json.dumps(list(c.members))) for c in chats],
        )

    def chats(self) -> list[ChatInfo]:
        rows = self.conn.execute("SELECT id, guid, name, is_group, members FROM chats ORDER BY id")
        return [ChatInfo(r[0], r[1], r[2], bool(r[3]), tuple(json.loads(r[4]))) for r in rows]

    def chat(self, chat_id: int) -> ChatInfo | None:
        return next((c for c in self.chats() if c.id == chat_id), None)

    def chat_people(self, chat: ChatInfo) -> set[str]:
        """Everyone in a chat besides the owner: its members now and whoever wrote in it (a
        member who left is gone from the list, not from the chat)."""
        wrote = self.conn.execute(
            "SELECT DISTINCT sender FROM messages WHERE chat_id = ? AND sender != ? "
            "AND kind != 'system'",
            (chat.id, ME),
        )
        return set(chat.members) | {sender for (sender,) in wrote}

    def one_to_one_chat_ids(self, person_id: str) -> list[int]:
        """The 1:1 chats with a person (one per handle they texted from)."""
        return [c.id for c in self.chats() if not c.is_group and c.members == (person_id,)]

    def find_chats(self, query: str) -> list[ChatInfo]:
        """Chats a query names: its id (as `casper chats` shows it) wins, then the exact label
        `casper chats` prints (any case), then labels that contain the query."""
        q = query.strip().lower()
        chats = self.chats()
        by_id = [c for c in chats if q == str(c.id)]
        return (
            by_id or self.chats_labelled(query, chats) or [c for c in chats if q in c.name.lower()]
        )

    def chats_labelled(self, label: str, chats: list[ChatInfo] | None = None) -> list[ChatInfo]:
        """The chats whose label is exactly `label` (any case, spaces around ignored)."""
        q = label.strip().lower()
        return [c for c in (self.chats() if chats is None else chats) if c.name.lower() == q]

    def resolve_chat(self, query: str) -> ChatInfo:
        """Exactly one chat for an id or a name, for every command that takes one (`--chat`,
        `stats NAME`); otherwise an error that lists what it matched."""
        found = self.find_chats(query)
        if not found:
            raise ChatNotFound(f"no chat matches '{query}'")
        if len(found) > 1:
            raise AmbiguousChat(query, [(c.id, c.name) for c in found])
        return found[0]
