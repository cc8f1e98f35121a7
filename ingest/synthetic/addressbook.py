"""Write macOS AddressBook databases (`AddressBook-v22.abcddb`, Core Data SQLite)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SOURCE = "5E3C9A41-7D2B-4F86-9C10-3B8E6A2D4F17"
DB_NAME = "AddressBook-v22.abcddb"
RECORD_ENT, SOURCE_ENT = 22, 21  # Core Data entity numbers: contact card vs. account container
_LABELS = ("_$!<Mobile>!$_", "_$!<Home>!$_", "_$!<Work>!$_", "iPhone")
_EMAIL_LABELS = ("_$!<Home>!$_", "_$!<Work>!$_", "_$!<Other>!$_")

# The columns Casper's reader probes, plus enough of Apple's others to look like the real thing.
_SCHEMA = """
CREATE TABLE ZABCDRECORD (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER,
  ZCONTAINER INTEGER, ZDISPLAYFLAGS INTEGER, ZCREATIONDATE TIMESTAMP,
  ZMODIFICATIONDATE TIMESTAMP, ZFIRSTNAME VARCHAR, ZLASTNAME VARCHAR, ZMIDDLENAME VARCHAR,
  ZNICKNAME VARCHAR, ZORGANIZATION VARCHAR, ZJOBTITLE VARCHAR, ZDEPARTMENT VARCHAR,
  ZNAME VARCHAR, ZUNIQUEID VARCHAR, ZSORTINGFIRSTNAME VARCHAR, ZSORTINGLASTNAME VARCHAR,
  ZTHUMBNAILIMAGEDATA BLOB);
CREATE TABLE ZABCDPHONENUMBER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER,
  ZISPRIMARY INTEGER, ZORDERINGINDEX INTEGER, ZOWNER INTEGER, ZAREACODE VARCHAR,
  ZCOUNTRYCODE VARCHAR, ZEXTENSION VARCHAR, ZFULLNUMBER VARCHAR, ZLABEL VARCHAR,
  ZLASTFOURDIGITS VARCHAR, ZLOCALNUMBER VARCHAR, ZUNIQUEID VARCHAR);
CREATE TABLE ZABCDEMAILADDRESS (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER,
  ZISPRIMARY INTEGER, ZORDERINGINDEX INTEGER, ZOWNER INTEGER, ZADDRESS VARCHAR,
  ZADDRESSNORMALIZED VARCHAR, ZLABEL VARCHAR, ZUNIQUEID VARCHAR);
CREATE TABLE ZABCDIMAGE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER,
  ZOWNER INTEGER, ZIMAGEDATA BLOB);
CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER,
  Z_MAX INTEGER);
CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
CREATE INDEX ZABCDPHONENUMBER_ZOWNER_INDEX ON ZABCDPHONENUMBER (ZOWNER);
CREATE INDEX ZABCDEMAILADDRESS_ZOWNER_INDEX ON ZABCDEMAILADDRESS (ZOWNER);
CREATE INDEX ZABCDEMAILADDRESS_ZADDRESSNORMALIZED_INDEX ON ZABCDEMAILADDRESS (ZADDRESSNORMALIZED);
"""


@dataclass(frozen=True, slots=True)
class Card:
    """One contact card. Phones are written exactly as given: type them the way a person would."""

    first: str | None
    last: str | None = None
    nickname: str | None = None
    organization: str | None = None
    phones: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()


def addressbook_path(folder: Path, source: str | None = DEFAULT_SOURCE) -> Path:
    """Where a source DB lives under an AddressBook folder (`None`: the local "On My Mac" DB)."""
    return folder / DB_NAME if source is None else folder / "Sources" / source / DB_NAME


def write_addressbook(
    folder: Path, cards: Sequence[Card], source: str | None = DEFAULT_SOURCE
) -> Path:
    """Write `folder/Sources/<source>/AddressBook-v22.abcddb` holding `cards`; returns its path."""
    path = addressbook_path(Path(folder), source)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.executescript(f"BEGIN;{_SCHEMA}COMMIT;")
        _write_cards(conn, cards, source or "LOCAL")
        conn.commit()
    finally:
        conn.close()
    return path


def _uid(source: str, kind: str, n: int) -> str:
    return f"{source[:8]}-{kind}-{n:04d}:ABPerson"


def _write_cards(conn: sqlite3.Connection, cards: Sequence[Card], source: str) -> None:
    # Real files keep the account container in ZABCDRECORD too: a row with no names at all.
    conn.execute(
        "INSERT INTO ZABCDRECORD (Z_PK, Z_ENT, Z_OPT, ZNAME, ZUNIQUEID) VALUES (1, ?, 1, NULL, ?)",
        (SOURCE_ENT, f"{source}:ABAccount"),
    )
    phone_pk = email_pk = 0
    for i, card in enumerate(cards, start=2):
        conn.execute(
            "INSERT INTO ZABCDRECORD (Z_PK, Z_ENT, Z_OPT, ZCONTAINER, ZDISPLAYFLAGS, "
            "ZCREATIONDATE, ZMODIFICATIONDATE, ZFIRSTNAME, ZLASTNAME, ZNICKNAME, ZORGANIZATION, "
            "ZUNIQUEID, ZSORTINGFIRSTNAME, ZSORTINGLASTNAME) "
            "VALUES (?, ?, 3, 1, ?, 660000000.0, 700000000.0, ?, ?, ?, ?, ?, ?, ?)",
            (
                i,
                RECORD_ENT,
                1 if card.organization and not card.first else 0,
                card.first,
                card.last,
                card.nickname,
                card.organization,
                _uid(source, "C", i),
                (card.first or card.nickname or "").lower(),
                (card.last or "").lower(),
            ),
        )
        for order, number in enumerate(card.phones):
            phone_pk += 1
            digits = "".join(c for c in number if c.isdigit())
            conn.execute(
                "INSERT INTO ZABCDPHONENUMBER (Z_PK, Z_ENT, Z_OPT, ZISPRIMARY, ZORDERINGINDEX, "
                "ZOWNER, ZFULLNUMBER, ZLABEL, ZLASTFOURDIGITS, ZUNIQUEID) "
                "VALUES (?, 18, 1, ?, ?, ?, ?, ?, ?, ?)",
                (
                    phone_pk,
                    int(order == 0),
                    order,
                    i,
                    number,
                    _LABELS[order % len(_LABELS)],
                    digits[-4:],
                    _uid(source, "P", phone_pk),
                ),
            )
        for order, address in enumerate(card.emails):
            email_pk += 1
            conn.execute(
                "INSERT INTO ZABCDEMAILADDRESS (Z_PK, Z_ENT, Z_OPT, ZISPRIMARY, ZORDERINGINDEX, "
                "ZOWNER, ZADDRESS, ZADDRESSNORMALIZED, ZLABEL, ZUNIQUEID) "
                "VALUES (?, 10, 1, ?, ?, ?, ?, ?, ?, ?)",
                (
                    email_pk,
                    int(order == 0),
                    order,
                    i,
                    address,
                    address.strip().lower(),
                    _EMAIL_LABELS[order % len(_EMAIL_LABELS)],
                    _uid(source, "E", email_pk),
                ),
            )
    conn.executemany(
        "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?,?,?,?)",
        [
            (10, "ABCDEmailAddress", 0, email_pk),
            (18, "ABCDPhoneNumber", 0, phone_pk),
            (RECORD_ENT, "ABCDContact", 19, len(cards) + 1),
        ],
    )
