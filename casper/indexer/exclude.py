"""People, chats and handles kept out of Casper (the setting `exclude`): never stored, chunked,
embedded, counted in the stats or shown by a tool.

An entry names a person by any name on their card ("Mom", "Sammy", "Rivera": every card
holding that name), a chat by its name ("chat:Climbing crew"), or a handle (a phone or an email,
normalised as ingest normalises chat.db's: "+1 312 555 0177" is +13125550177). A person kept out
takes their own messages (in any chat), their 1:1 chats (both sides), their tapbacks and the
group events that name them ("added dana@…"); a chat kept out takes every message in it.

A chat entry is bound to the chat it named, by the chat's identifier (the last part of its guid,
the same for its SMS and iMessage rows), the first time it matches: renaming the group (any
member can) keeps it out. The binding lives in the store's meta, kept when a rebuild empties the
store, and goes when the entry is removed.

New rows of theirs are dropped as they are read (`Exclusions.drops`); what a store already holds
(an exclusion added to an existing index, rows a worker process copied in) is purged by `purge`,
with SQLite's secure_delete on so the freed pages keep no text. A change to the entries makes
`casper index` read the history again (casper.indexer.run): adding one rewrites the index without
them and compacts the store (`compact_store`) so no file of the data dir keeps their text;
removing one brings them back.

Imports: ingest (handles, row_text), casper.errors, casper.records, casper.store.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import ingest
from casper.errors import CasperError
from casper.indexer.identity import KeptOut
from casper.indexer.people import build_directory, label_chats
from casper.records import ChatInfo, Person
from casper.store.db import Store
from ingest.handles import normalise_address, phone_digits_key
from ingest.records import Message, MessageRow, Reaction, ReactionRow
from ingest.row_text import event_handle

if TYPE_CHECKING:
    import sqlite3

    from ingest.schema import Capabilities

CHAT_PREFIX = "chat:"
# store meta: the entries the store holds no rows of (JSON list), and what was purged for them
EXCLUDED = "excluded"
PURGED = "excluded_purged"
# store meta: chat entry → {identifier: the chat's name when the entry first matched it}
BOUND = "excluded_bound"
Bound = Mapping[str, Mapping[str, str]]
_HANDLE = re.compile(r"[+\d\s().-]{5,}")
_SCHEME = re.compile(r"(?i)^(?:tel|sms|imessage|mailto):\s*")  # as a link or a card writes it


@dataclass(frozen=True, slots=True)
class Exclusions:
    """The entries resolved to this history's people and chats."""

    people: frozenset[str] = frozenset()  # person ids
    chats: frozenset[int] = frozenset()  # chat ids: the named chats and those people's 1:1 chats
    # each entry and what it names ("Mom" → ("Mom",)); an entry naming nothing has ()
    named: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the handles of the people kept out, normalised (a group event naming one is kept out)
    addresses: frozenset[str] = frozenset()
    # chat entry → {identifier: name when first matched}: what BOUND records
    bound: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.people or self.chats)

    def drops(self, m: Message | MessageRow, handle_person: Mapping[int, str]) -> bool:
        """A message read from chat.db that is kept out."""
        if m.chat_rowid in self.chats:
            return True
        if m.kind == "system" and self.names_them(m.event):
            return True
        return not m.is_from_me and handle_person.get(m.handle_rowid or 0) in self.people

    def names_them(self, event: str | None) -> bool:
        """A group event ("added X", "removed X") naming a handle of someone kept out."""
        handle = event_handle(event)
        if handle is None or not self.addresses:
            return False
        address = normalise_address(handle)
        return address in self.addresses or _same_phone(phone_digits_key(address),
                                                         tuple(self.addresses))  # fmt: skip

    def drops_reaction(self, r: Reaction | ReactionRow, handle_person: Mapping[int, str]) -> bool:
        return not r.is_from_me and handle_person.get(r.handle_rowid or 0) in self.people


def is_handle(entry: str) -> bool:
    """An entry that is a phone number or an email rather than a name (`tel:` and `mailto:`
    links too)."""
    text = _SCHEME.sub("", entry.strip())
    return "@" in text or bool(_HANDLE.fullmatch(text))


def _folded(name: str) -> str:
    """A name as an entry matches it: case and runs of spaces aside ("dana  okafor")."""
    return " ".join(name.split()).casefold()


def identity_of(chat: ChatInfo) -> str:
    """What a chat entry is bound to: the chat's identifier (its guid's last part: one for
    the SMS and the iMessage row of a group), or the guid when it has no parts."""
    return chat.guid.rsplit(";", 1)[-1] if chat.guid else f"#{chat.id}"


def resolve(
    entries: Sequence[str],
    people: Sequence[Person],
    chats: Sequence[ChatInfo],
    bound: Bound | None = None,
) -> Exclusions:
    """The people and chats `entries` name in this history (see the module's docstring); a
    chat entry also names the chats `bound` holds for it, whatever they are called now."""
    bound = bound or {}
    ids: set[str] = set()
    chat_ids: set[int] = set()
    named: list[tuple[str, tuple[str, ...]]] = []
    binding: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    for entry in entries:
        text = entry.strip()
        if text.casefold().startswith(CHAT_PREFIX):
            wanted = _folded(text[len(CHAT_PREFIX) :])
            held = dict(bound.get(entry, {}))
            found = [c for c in chats if c.id and (wanted and _folded(c.name) == wanted
                                                  or identity_of(c) in held)]  # fmt: skip
            chat_ids.update(c.id for c in found)
            for c in found:  # the name it had when first matched, never a later one
                held.setdefault(identity_of(c), c.name)
            binding.append((entry, tuple(sorted(held.items()))))
            named.append(
                (entry, tuple(f"chat {name} [{key}]" for key, name in sorted(held.items())))
            )
            continue
        if is_handle(text):
            address = normalise_address(_SCHEME.sub("", text))
            key = phone_digits_key(address)
            hit = [p for p in people if address in p.handles or _same_phone(key, p.handles)]
        else:
            wanted = _folded(text)
            hit = [p for p in people if wanted and wanted in {_folded(n) for n in p.name_forms()}]
        ids.update(p.id for p in hit)
        named.append((entry, tuple(p.name for p in hit)))
    one_to_one = {c.id for c in chats if not c.is_group and len(c.members) == 1
                  and c.members[0] in ids}  # fmt: skip
    addresses = frozenset(h for p in people if p.id in ids for h in p.handles)
    return Exclusions(frozenset(ids), frozenset(chat_ids | one_to_one), tuple(named), addresses,
                      tuple(binding))  # fmt: skip


def _same_phone(key: str | None, handles: Sequence[str]) -> bool:
    """A phone written another way ("(312) 555-0177" for +13125550177): same last 10 digits."""
    return key is not None and key in {phone_digits_key(h) for h in handles}


@dataclass(slots=True)
class Purged:
    """What `purge` removed from the store."""

    messages: int = 0
    reactions: int = 0
    chats: set[int] = field(default_factory=set)  # chats that lost messages (re-chunk them)
    senders: set[str] = field(default_factory=set)  # who wrote what was removed


def purge(store: Store, excluded: Exclusions) -> Purged:
    """Remove what the store holds of `excluded` (inside the caller's transaction), with
    secure_delete on so the freed space is zeroed, not left holding their text."""
    out = Purged()
    if not excluded:
        return out
    people, chats = sorted(excluded.people), sorted(excluded.chats)
    conn = store.conn
    conn.execute("PRAGMA secure_delete = ON")
    try:
        who, where = ",".join("?" * len(people)), ",".join("?" * len(chats))
        guids = [g for (g,) in conn.execute(
            f"SELECT guid FROM messages WHERE sender IN ({who}) OR chat_id IN ({where})",
            [*people, *chats],
        )]  # fmt: skip
        guids += [g for g, event in conn.execute(  # "added dana@…", sent by someone else
            "SELECT guid, event FROM messages WHERE kind = 'system' AND event IS NOT NULL"
        ) if excluded.names_them(event)]  # fmt: skip
        out.chats = store.delete_messages(guids, out.senders)
        out.messages = len(guids)
        before = conn.total_changes
        conn.execute(f"DELETE FROM reactions WHERE sender IN ({who})", people)
        for i in range(0, len(guids), 500):
            part = guids[i : i + 500]
            conn.execute(
                f"DELETE FROM reactions WHERE target_guid IN ({','.join('?' * len(part))})", part
            )
        out.reactions = conn.total_changes - before
        conn.execute(f"DELETE FROM chats WHERE id IN ({where})", chats)
        conn.execute(f"DELETE FROM contact_stats WHERE person_id IN ({who})", people)
    finally:
        conn.execute("PRAGMA secure_delete = OFF")
    return out


def remember(
    store: Store, entries: Sequence[str], excluded: Exclusions, purged: Purged, *, dropped: int = 0
) -> None:
    """Note the entries the store now holds nothing of, and add up what was kept out for them:
    rows purged from the store and rows read but not stored (what `casper doctor` lists)."""
    before = last_purge(store)
    same = before.get("entries") == list(entries)
    store.set_meta(EXCLUDED, json.dumps(list(entries)))
    store.set_meta(BOUND, json.dumps({entry: dict(held) for entry, held in excluded.bound}))
    if not purged.messages and not purged.reactions and not dropped and same:
        return
    removed = purged.messages + purged.reactions + dropped
    totals = {
        "entries": list(entries),
        "named": {entry: list(names) for entry, names in excluded.named},
        "rows": removed + (int(before.get("rows", 0)) if same else 0),
        "at": time.time(),
    }
    store.set_meta(PURGED, json.dumps(totals))


def last_purge(store: Store) -> dict:
    """What was purged for the current entries ({} when nothing was)."""
    try:
        value = json.loads(store.get_meta(PURGED) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def stored_bound(store: Store) -> dict[str, dict[str, str]]:
    """The chats each chat entry was bound to (identifier → name when matched)."""
    try:
        value = json.loads(store.get_meta(BOUND) or "{}")
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): {str(i): str(n) for i, n in v.items()} for k, v in value.items()
            if isinstance(v, dict)}  # fmt: skip


def not_applied(store: Store, entries: Iterable[str]) -> list[str]:
    """The entries of config.toml the store has not been purged for yet (it may still hold
    their rows): nothing may be answered from it until a run applies them."""
    added, _removed = change(store, entries)
    return added if store.has_messages() else []


class NotAppliedYet(CasperError):
    """config.toml keeps out someone the store (and the index) may still hold: nothing is
    answered from them until a run has purged them."""

    default_hint = (
        "run `casper index` to purge them first (a running casper service does it by itself "
        "before it answers)"
    )


def require_applied(store: Store, entries: Iterable[str]) -> None:
    """NotAppliedYet while config.toml keeps out someone the store may still hold."""
    pending = not_applied(store, entries)
    if pending:
        raise NotAppliedYet(f"config.toml keeps out {', '.join(pending)}, whom the index "
                            "still holds")  # fmt: skip


def stored_entries(store: Store) -> list[str] | None:
    """The entries the store was last purged for (None: never recorded)."""
    raw = store.get_meta(EXCLUDED)
    try:
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return [str(v) for v in value] if isinstance(value, list) else None


def change(store: Store, entries: Iterable[str]) -> tuple[list[str], list[str]]:
    """(entries added, entries removed) since the store last recorded them."""
    now = list(dict.fromkeys(entries))
    before = stored_entries(store) or []
    return [e for e in now if e not in before], [e for e in before if e not in now]


def change_line(added: Sequence[str], removed: Sequence[str]) -> str:
    """What `casper index` says when the entries changed (it reads the history again)."""
    said = []
    if added:
        said.append(f"kept out now: {', '.join(added)}: reading the history again without "
                    "them (their messages are purged from the store and the index)")  # fmt: skip
    if removed:
        said.append(f"no longer kept out: {', '.join(removed)}: reading the history again to "
                    "bring them back")  # fmt: skip
    return "; ".join(said)


def counter(
    conn: sqlite3.Connection,
    caps: Capabilities,
    contacts: Path | None,
    entries: Sequence[str],
    bound: Bound | None = None,
) -> KeptOut | None:
    """How many of a page of chat.db rows `entries` keep out (for casper.indexer.identity,
    whose comparison would otherwise count them as rows never read); None without entries,
    or when the people cannot be read here (the comparison then counts every row)."""
    if not entries:
        return None
    try:
        handles = ingest.load_handles(conn)
        cards = ingest.match_contacts(handles, ingest.load_contacts(contacts))
        owner = ingest.load_owner_addresses(conn, caps)
        directory = build_directory(handles, cards, owner)
        chats = label_chats(ingest.load_chats(conn, caps), directory)
    except Exception:  # noqa: BLE001 - the run itself says what does not read
        return None
    excluded = resolve(entries, directory.people, chats, bound)
    handle_person = directory.handle_person

    def count(msgs: Sequence[MessageRow], reacts: Sequence[ReactionRow]) -> int:
        return sum(excluded.drops(m, handle_person) for m in msgs) + sum(
            excluded.drops_reaction(r, handle_person) for r in reacts
        )

    return count


def compact_store(store: Store) -> None:
    """Rewrite the store file from its live rows (VACUUM) and fold the write-ahead log into
    it, truncated: pages that held purged text are gone from every file, not just unlinked
    from the tables. Run outside a transaction."""
    store.conn.execute("VACUUM")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
