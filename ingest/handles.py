"""Handles and chats from chat.db, with addresses normalised to E.164 phones / lowercase emails."""

from __future__ import annotations

import re
import sqlite3
from functools import lru_cache

import phonenumbers
from phonenumbers import PhoneNumberFormat, ValidationResult

from ingest.connect import reads_chat_db
from ingest.records import Chat, Handle
from ingest.schema import Capabilities, table_columns

DEFAULT_REGION = "US"
GROUP_STYLE = 43
_PHONE_PUNCT = re.compile(r"[\s\-().\u00a0/]")
_PHONE_SHAPE = re.compile(r"\+?\d+")
_MIN_PHONE_DIGITS = 7  # below this it is a short code (e.g. 12345), never a person's number


def _email(raw: str) -> str:
    addr = raw.strip()
    if addr.lower().startswith("mailto:"):
        addr = addr[7:]
    if "<" in addr and addr.endswith(">"):
        addr = addr[addr.rindex("<") + 1 : -1]
    return addr.strip().lower()


@lru_cache(maxsize=8192)
def _phone(raw: str, region: str) -> str | None:
    compact = _PHONE_PUNCT.sub("", raw)
    if compact.lower().startswith("tel:"):
        compact = compact[4:]
    if not _PHONE_SHAPE.fullmatch(compact) or len(compact.lstrip("+")) < _MIN_PHONE_DIGITS:
        return None
    try:
        number = phonenumbers.parse(compact, region)
    except phonenumbers.NumberParseException:
        return None
    # IS_POSSIBLE_LOCAL_ONLY (e.g. a 7-digit US number) would invent a wrong +1 prefix.
    if phonenumbers.is_possible_number_with_reason(number) != ValidationResult.IS_POSSIBLE:
        return None
    return phonenumbers.format_number(number, PhoneNumberFormat.E164)


def normalise_address(raw: str, country: str | None = None) -> str:
    """Phone → E.164 (region from the handle's country), email → lowercase; else unchanged."""
    text = (raw or "").strip()
    if not text:
        return ""
    if "@" in text and not text.lower().startswith("urn:"):
        return _email(text)
    region = (country or DEFAULT_REGION).strip().upper() or DEFAULT_REGION
    return _phone(text, region) or text


def phone_digits_key(address: str) -> str | None:
    """Last 10 digits of a phone address, the fallback key when E.164 forms disagree."""
    if "@" in address:
        return None
    digits = "".join(ch for ch in address if ch.isdigit())
    return digits[-10:] if len(digits) >= _MIN_PHONE_DIGITS else None


@reads_chat_db
def load_handles(conn: sqlite3.Connection) -> list[Handle]:
    """Every row of `handle`, normalised; columns missing on old schemas read as None."""
    cols = table_columns(conn, "handle")
    sql = "SELECT ROWID, id, {}, {}, {} FROM handle ORDER BY ROWID".format(
        *(c if c in cols else "NULL" for c in ("country", "service", "person_centric_id"))
    )
    out = []
    for rowid, raw, country, service, pcid in conn.execute(sql):
        raw = raw or ""
        out.append(
            Handle(
                rowid=rowid,
                address=normalise_address(raw, country),
                raw=raw,
                service=service or "iMessage",
                country=country or None,
                person_centric_id=pcid or None,
            )
        )
    return out


@reads_chat_db
def load_chats(conn: sqlite3.Connection, caps: Capabilities) -> list[Chat]:
    """Every chat with its member handle ROWIDs (the owner is never listed)."""
    cols = [
        c if caps.has_column(c, "chat") else "NULL"
        for c in ("chat_identifier", "display_name", "style")
    ]
    members: dict[int, list[int]] = {}
    if caps.has_table("chat_handle_join"):
        sql = "SELECT chat_id, handle_id FROM chat_handle_join ORDER BY chat_id, handle_id"
        for chat_id, handle_id in conn.execute(sql):
            members.setdefault(chat_id, []).append(handle_id)
    sql = f"SELECT ROWID, guid, {', '.join(cols)} FROM chat ORDER BY ROWID"
    chats = []
    for rowid, guid, identifier, display_name, style in conn.execute(sql):
        is_group = style == GROUP_STYLE if style is not None else ";+;" in (guid or "")
        chats.append(
            Chat(
                rowid=rowid,
                guid=guid or "",
                identifier=identifier or "",
                display_name=display_name or None,
                is_group=is_group,
                handle_rowids=tuple(members.get(rowid, ())),
            )
        )
    return chats


# Messages write the owner's own address into each chat (`account_login`, "E:me@icloud.com" or
# "P:+1…"; `last_addressed_handle`) and each message (`account`, `destination_caller_id`).
_OWN_CHAT_COLUMNS = ("account_login", "last_addressed_handle")
_OWN_MESSAGE_COLUMNS = ("account", "destination_caller_id")
OWN_SAMPLE = 2000  # the newest messages read for the owner's addresses (no column is indexed)


def _own(raw: object) -> str:
    text = raw.strip() if isinstance(raw, str) else ""
    if len(text) > 2 and text[1] == ":" and text[0] in "EePp":  # account ids: "E:", "P:"
        text = text[2:]
    return normalise_address(text) if text else ""


@reads_chat_db
def load_owner_addresses(conn: sqlite3.Connection, caps: Capabilities) -> frozenset[str]:
    """The phone owner's own addresses (normalised like handles): the ones Messages records
    as the account each chat and message went through. A handle with one of them, and the
    AddressBook card holding it (the "me" card), is the owner, never a contact."""
    found: set[str] = set()
    chat_cols = [c for c in _OWN_CHAT_COLUMNS if caps.has_column(c, "chat")]
    if chat_cols:
        for row in conn.execute(f"SELECT DISTINCT {', '.join(chat_cols)} FROM chat"):
            found.update(_own(v) for v in row)
    msg_cols = [c for c in _OWN_MESSAGE_COLUMNS if caps.has_column(c, "message")]
    if msg_cols:
        newest = f"SELECT {', '.join(msg_cols)} FROM message ORDER BY ROWID DESC LIMIT ?"
        for row in conn.execute(f"SELECT DISTINCT * FROM ({newest})", (OWN_SAMPLE,)):
            found.update(_own(v) for v in row)
    return frozenset(a for a in found if a and ("@" in a or a.startswith("+")))
