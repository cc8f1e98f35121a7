"""AddressBook (.abcddb) cards → Contacts, merged across sources, and matched to chat.db handles."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from ingest.connect import CONTACTS_HINT, open_contacts_db
from ingest.handles import DEFAULT_REGION, normalise_address, phone_digits_key
from ingest.records import Contact, Handle
from ingest.schema import table_columns

log = logging.getLogger(__name__)

DB_NAME = "AddressBook-v22.abcddb"
_NAME_COLS = ("ZFIRSTNAME", "ZLASTNAME", "ZNICKNAME", "ZORGANIZATION")


def source_files(path: Path) -> list[Path]:
    """The .abcddb files `path` names: itself, or those of an AddressBook folder (+ Sources/*)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    found = {*path.glob("*.abcddb"), *path.glob("Sources/*/*.abcddb")}
    return sorted(found)


def has_address_book(path: Path) -> bool:
    """True when `path` is an .abcddb file or a folder holding one (as load_contacts reads)."""
    return bool(source_files(Path(path).expanduser()))


def _source_name(path: Path) -> str:
    """The account UUID for `Sources/<UUID>/…`, else the file's stem (the local DB)."""
    return path.parent.name if path.parent.parent.name == "Sources" else path.stem


def _owned(conn: sqlite3.Connection, table: str, column: str) -> dict[int, list[str]]:
    cols = table_columns(conn, table)
    out: dict[int, list[str]] = {}
    if "ZOWNER" not in cols or column not in cols:
        return out
    for owner, value in conn.execute(f"SELECT ZOWNER, {column} FROM {table} ORDER BY Z_PK"):
        if owner is not None and isinstance(value, str) and value.strip():
            out.setdefault(owner, []).append(value)
    return out


def _read_cards(conn: sqlite3.Connection, source: str, region: str) -> list[Contact]:
    cols = table_columns(conn, "ZABCDRECORD")
    if "Z_PK" not in cols:
        log.warning("contacts: %s has no ZABCDRECORD table; skipped", source)
        return []
    names = ", ".join(c if c in cols else "NULL" for c in _NAME_COLS)
    phones = _owned(conn, "ZABCDPHONENUMBER", "ZFULLNUMBER")
    emails = _owned(conn, "ZABCDEMAILADDRESS", "ZADDRESS")
    cards = []
    for pk, first, last, nick, org in conn.execute(f"SELECT Z_PK, {names} FROM ZABCDRECORD"):
        card_phones = tuple(dict.fromkeys(normalise_address(p, region) for p in phones.get(pk, ())))
        card_emails = tuple(dict.fromkeys(normalise_address(e) for e in emails.get(pk, ())))
        if not (card_phones or card_emails):
            continue  # account containers and cards no handle could ever match
        cards.append(
            Contact(
                key=f"{source}:{pk}",
                first=_clean(first),
                last=_clean(last),
                nickname=_clean(nick),
                organization=_clean(org),
                phones=card_phones,
                emails=card_emails,
            )
        )
    return cards


def _clean(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _read_db(path: Path, region: str) -> list[Contact]:
    conn = open_contacts_db(path)
    if conn is None:
        return []
    try:
        return _read_cards(conn, _source_name(path), region)
    except sqlite3.Error as exc:
        log.warning(
            "contacts: cannot read %s (%s); running without its names",
            path,
            exc,
            extra={"hint": CONTACTS_HINT},
        )
        return []
    finally:
        conn.close()


def _completeness(c: Contact) -> tuple[int, int]:
    return (bool(c.first) + bool(c.last), bool(c.nickname or c.organization))


def _merge(group: Sequence[Contact]) -> Contact:
    """One person from several cards: the most complete name, every phone and email."""
    best = max(sorted(group, key=lambda c: c.key), key=_completeness)
    others = [c for c in sorted(group, key=lambda c: c.key) if c is not best]
    return Contact(
        key=min(c.key for c in group),
        first=best.first,
        last=best.last,
        nickname=best.nickname or next((c.nickname for c in others if c.nickname), None),
        organization=best.organization
        or next((c.organization for c in others if c.organization), None),
        phones=tuple(dict.fromkeys(p for c in (best, *others) for p in c.phones)),
        emails=tuple(dict.fromkeys(e for c in (best, *others) for e in c.emails)),
    )


def merge_contacts(cards: Sequence[Contact]) -> list[Contact]:
    """Union cards that share any phone or email (the same person in two accounts)."""
    parent = list(range(len(cards)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_seen: dict[str, int] = {}
    for i, card in enumerate(cards):
        for ident in (*card.phones, *card.emails):
            j = first_seen.setdefault(ident, i)
            parent[root(i)] = root(j)
    groups: dict[int, list[Contact]] = {}
    for i, card in enumerate(cards):
        groups.setdefault(root(i), []).append(card)
    return sorted((_merge(g) for g in groups.values()), key=lambda c: c.key)


def load_contacts(path: Path | None, default_region: str = DEFAULT_REGION) -> list[Contact]:
    """Cards from an .abcddb file or an AddressBook folder (+ Sources/*); [] when unreadable."""
    if path is None:
        return []
    path = Path(path).expanduser()
    files = source_files(path)
    if not files:
        log.warning(
            "contacts: no AddressBook database at %s; people show as numbers and emails",
            path,
            extra={"hint": CONTACTS_HINT},
        )
        return []
    cards = [card for f in files for card in _read_db(f, default_region)]
    return merge_contacts(cards)


def match_contacts(handles: Iterable[Handle], contacts: Sequence[Contact]) -> dict[int, Contact]:
    """Handle ROWID → card: exact E.164/email, then an unambiguous last-10-digits match."""
    exact: dict[str, Contact] = {}
    by_digits: dict[str, set[int]] = {}
    for i, contact in enumerate(contacts):
        for ident in (*contact.phones, *contact.emails):
            exact.setdefault(ident, contact)
        for phone in contact.phones:
            if key := phone_digits_key(phone):
                by_digits.setdefault(key, set()).add(i)
    matched: dict[int, Contact] = {}
    handles = list(handles)
    for h in handles:
        found = exact.get(h.address)
        if found is None and (key := phone_digits_key(h.address)):
            candidates = by_digits.get(key, set())
            found = contacts[next(iter(candidates))] if len(candidates) == 1 else None
        if found is not None:
            matched[h.rowid] = found
    # Apple links one person's phone and email handles by person_centric_id: share the card.
    people: dict[str, list[Handle]] = {}
    for h in handles:
        if h.person_centric_id:
            people.setdefault(h.person_centric_id, []).append(h)
    for members in people.values():
        cards = {matched[h.rowid].key: matched[h.rowid] for h in members if h.rowid in matched}
        if len(cards) == 1:
            card = next(iter(cards.values()))
            for h in members:
                matched.setdefault(h.rowid, card)
    return matched
