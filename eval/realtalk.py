"""REALTALK (real texting) → one chat.db + AddressBook per owner's phone, and its questions.

REALTALK (Lee et al. 2025, arXiv 2502.13270) is ~3 weeks of real people texting in pairs. A
phone holds every conversation its owner had, so the conversations are grouped by their
`speaker_1` (the owner): each owner's phone is one history with a 1:1 chat per contact,
written through the same chat.db / AddressBook writers as the other eval sets and indexed by
`casper index`'s own path. Questions name people as the data does (the owner in the third
person, or by a name the chat uses that is on no card); `me_names` is the owner.

The ambiguous-names variant writes the same histories with the traps a real phone has: the
owner's own card (their own address, so chat.db holds a handle for it), a second contact
with the owner's first name (who texts a little), and the second contact saved on their card
under another given name, so the name the questions use for them is on no card.

The data is read in place (`../shared/fixtures/realtalk/` or `$CASPER_REALTALK`), never copied:
nothing of it is written into the repository, and nothing of it is typed into the code.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from casper.errors import CasperError
from eval.gold import GoldItem
from eval.metrics import dedupe
from ingest.synthetic import Card, ChatDbWriter, texting_talk, write_addressbook

log = logging.getLogger(__name__)

CONVERTER_VERSION = "realtalk-v1"
TIMEZONE = "UTC"  # the data's clock times are local; one zone reads them all the same way
TIME_FORMAT = "%d.%m.%Y, %H:%M:%S"
# Integer ids in the data → meaning (the paper's: 1 multi-message, 2 temporal, 3 open).
CATEGORIES: dict[int, str] = {1: "spread", 2: "temporal", 3: "open"}
DOMAIN = "realtalk.invalid"
# The ambiguous variant's extra people: surnames and given names no conversation uses (the
# first one absent from the history's text is taken, so nothing is matched by accident).
SURNAMES = ("Okafor", "Lindqvist", "Moreau", "Takahashi", "Novak", "Brennan", "Castellano")
GIVEN_NAMES = ("Harriet", "Ingrid", "Beatrix", "Rosalind", "Marguerite", "Philippa")
NAMESAKE_SESSIONS = 12  # how many bursts of texting the owner's namesake sends over the history
_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_SPLIT = re.compile(r"[;,.\s]+")  # "D13:4. D14:4" is two ids


@dataclass(frozen=True, slots=True)
class Turn:
    """One text as it was sent."""

    dia_id: str
    speaker: str
    text: str
    ts: datetime  # aware, in TIMEZONE
    photos: tuple[str, ...] = ()  # the image files sent with it (attachments, no caption)


@dataclass(frozen=True, slots=True)
class Talk:
    """One conversation: the owner (speaker_1) and a contact (speaker_2)."""

    key: str  # the file's stem
    owner: str
    contact: str
    turns: tuple[Turn, ...]
    questions: tuple[GoldItem, ...]
    dropped_evidence: tuple[str, ...]
    source_hash: str

    def guid(self, dia_id: str) -> str:
        return message_guid(self.key, dia_id)


@dataclass(frozen=True, slots=True)
class Phone:
    """Every conversation of one owner: one history."""

    owner: str
    talks: tuple[Talk, ...]

    @property
    def key(self) -> str:
        return slug(self.owner)

    @property
    def questions(self) -> list[GoldItem]:
        return [q for t in self.talks for q in t.questions]

    def source_hash(self, ambiguous: bool) -> str:
        parts = [CONVERTER_VERSION, str(ambiguous), *(t.source_hash for t in self.talks)]
        return _hash(parts)


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"


def message_guid(key: str, dia_id: str) -> str:
    """Deterministic guid for a turn: Chat_1_A_B + D3:7 → realtalk-chat-1-a-b-D3-7."""
    return f"realtalk-{slug(key)}-{dia_id.replace(':', '-')}"


def card_name(speaker: str) -> str:
    """How the owner would save a speaker on a card: the name with a capital first letter."""
    return speaker[:1].upper() + speaker[1:]


def _hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def normalise_evidence(raw: Sequence[Any], known: set[str]) -> tuple[list[str], list[str]]:
    """(resolved dia_ids, dropped tokens): split on `;` `,` `.` and spaces, unpad, drop unknowns."""
    ids: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for token in _SPLIT.split(str(entry).strip()):
            if not token:
                continue
            m = _DIA_ID.match(token)
            norm = f"D{int(m[1])}:{int(m[2])}" if m else None
            if norm is None or norm not in known:
                dropped.append(token)
            else:
                ids.append(norm)
    return dedupe(ids), dropped


def _turns(raw: dict[str, Any], tz: ZoneInfo) -> list[Turn]:
    sessions = sorted(
        (int(m[1]), value)
        for key, value in raw.items()
        if (m := _SESSION.match(key)) and isinstance(value, list)
    )
    turns = []
    for _, session in sessions:
        for turn in session:
            ts = datetime.strptime(str(turn["date_time"]).strip(), TIME_FORMAT).replace(tzinfo=tz)
            photos = tuple(str(f) for f in turn.get("img_file") or () if not str(f).endswith(
                "_opt.jpg"))  # fmt: skip
            text = str(turn.get("clean_text") or turn.get("text") or "")
            turns.append(Turn(str(turn["dia_id"]), str(turn["speaker"]), text, ts, photos))
    return turns


def convert(key: str, raw: dict[str, Any], tz_name: str = TIMEZONE) -> Talk:
    """One REALTALK file's object → Talk (questions carry message guids, not dia_ids)."""
    names = raw["name"]
    owner, contact = str(names["speaker_1"]), str(names["speaker_2"])
    turns = _turns(raw, ZoneInfo(tz_name))
    known = {t.dia_id for t in turns}
    questions = []
    dropped_all: list[str] = []
    for i, qa in enumerate(raw.get("qa", [])):
        ids, dropped = normalise_evidence(qa.get("evidence", []), known)
        for token in dropped:
            log.info("%s q%d: unresolvable evidence id %r dropped", key, i, token)
        dropped_all += dropped
        code = int(qa["category"])
        questions.append(
            GoldItem(
                id=f"{slug(key)}-q{i}",
                question=str(qa["question"]),
                relevant=tuple(message_guid(key, d) for d in ids),
                category=CATEGORIES.get(code, str(code)),
                expected={"answer_contains": [str(qa.get("answer", ""))]},
                meta={"realtalk_category": code, "evidence": ids, "conversation": key},
            )
        )
    source = {"tz": tz_name, "key": key, "raw": {k: v for k, v in raw.items() if k != "qa"}}
    return Talk(key, owner, contact, tuple(turns), tuple(questions), tuple(dropped_all),
                _hash([source, raw.get("qa", [])]))  # fmt: skip


def default_realtalk_path() -> Path | None:
    """$CASPER_REALTALK, else ../shared/fixtures/realtalk/ beside this checkout."""
    env = os.environ.get("CASPER_REALTALK")
    if env:
        return Path(env).expanduser()
    candidate = Path(__file__).resolve().parents[2] / "shared/fixtures/realtalk"
    return candidate if candidate.is_dir() else None


def load_phones(path: Path | None) -> list[Phone]:
    """Every conversation in the folder, grouped into phones by owner (in file order)."""
    hint = "set CASPER_REALTALK to the folder holding the REALTALK Chat_*.json files"
    if path is None:
        raise CasperError("no REALTALK data folder found", hint=hint)
    files = sorted(Path(path).glob("*.json")) if Path(path).is_dir() else []
    if not files:
        raise CasperError(f"no REALTALK conversations (*.json) in {path}", hint=hint)
    talks = []
    for f in files:
        try:
            raw = json.loads(f.read_text("utf-8"))
            talks.append(convert(f.stem, raw))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CasperError(f"cannot read REALTALK file {f}: {exc}", hint=hint) from None
    owners = list(dict.fromkeys(t.owner for t in talks))
    return [Phone(o, tuple(t for t in talks if t.owner == o)) for o in owners]


def phone_half(phones: Sequence[Phone], phone: Phone) -> str:
    """The first owner's phone is the tune half, the others the report half."""
    return "tune" if phone.key == phones[0].key else "report"


# ---- writing a phone ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class People:
    """Who is on the phone's cards, and the ambiguous variant's extra people."""

    owner_address: str
    cards: dict[str, Any]  # talk key → its contact's Card
    owner_card: Any = None  # the owner's own card (ambiguous variant)
    namesake: Any = None  # a contact with the owner's first name (ambiguous variant)


def _unused(pool: Sequence[str], text: str, skip: int = 0) -> str:
    free = [p for p in pool if p.lower() not in text]
    return free[skip % len(free)] if free else pool[skip % len(pool)]


def plan_people(phone: Phone, ambiguous: bool) -> People:
    owner_address = f"{slug(phone.owner)}@{DOMAIN}"
    cards = {}
    for n, talk in enumerate(phone.talks):
        address = f"{slug(talk.contact)}.{n + 1}@{DOMAIN}"
        cards[talk.key] = Card(first=card_name(talk.contact), emails=(address,))
    if not ambiguous:
        return People(owner_address, cards)
    text = " ".join(t.text.lower() for talk in phone.talks for t in talk.turns)
    last = _unused(SURNAMES, text)
    owner_card = Card(first=card_name(phone.owner), last=last, emails=(owner_address,))
    namesake = Card(
        first=card_name(phone.owner),
        last=_unused(SURNAMES, text, 1),
        emails=(f"{slug(phone.owner)}.namesake@{DOMAIN}",),
    )
    if len(phone.talks) > 1:  # saved under another given name: the questions' name is on no card
        talk = phone.talks[-1]
        cards[talk.key] = Card(first=_unused(GIVEN_NAMES, text), last=_unused(SURNAMES, text, 2),
                               emails=cards[talk.key].emails)  # fmt: skip
    return People(owner_address, cards, owner_card, namesake)


def namesake_texts(phone: Phone, seed: int) -> list[tuple[bool, str, datetime]]:
    """What the owner's namesake and the owner text each other: (from_me, text, when), short
    everyday bursts (the texting set's filler, addressed by name) spread over the history."""
    rng = random.Random(seed)
    first = min(t.ts for talk in phone.talks for t in talk.turns)
    last = max(t.ts for talk in phone.talks for t in talk.turns)
    span = (last - first).total_seconds()
    out = []
    for i in range(NAMESAKE_SESSIONS):
        at = first + timedelta(seconds=span * (i + rng.random()) / NAMESAKE_SESSIONS)
        for j, (who, line) in enumerate(texting_talk.session(rng, "family")):
            text = line.replace("{you}", phone.owner.lower())  # they share the first name
            out.append((who == "a", " ".join(text.split()), at + timedelta(seconds=40 * j)))
    return [(me, text, ts) for me, text, ts in out if text]


@dataclass(frozen=True, slots=True)
class _Text:
    """One message to write: a turn of the data (kind 0) or the namesake's filler (kind 1)."""

    ts: datetime
    kind: int
    chat: int
    handle: int
    from_me: bool
    text: str
    guid: str | None = None
    photos: tuple[str, ...] = ()


def write_phone(phone: Phone, folder: Path, *, ambiguous: bool = False) -> tuple[Path, Path]:
    """Write `folder/chat.db` (Apple schema) and `folder/AddressBook`; returns both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    chat_db = folder / "chat.db"
    chat_db.unlink(missing_ok=True)
    people = plan_people(phone, ambiguous)
    seed = int(phone.source_hash(ambiguous)[:8], 16)
    with ChatDbWriter(chat_db, seed=seed, owner=people.owner_address) as writer:
        chats: dict[str, tuple[int, int]] = {}
        for talk in phone.talks:
            handle = writer.add_handle(people.cards[talk.key].emails[0])
            chats[talk.key] = (writer.add_chat([handle]), handle)
        # every text of the phone in the order it was sent, as Messages numbers them
        rows = sorted(
            ((t.ts, talk, t) for talk in phone.talks for t in talk.turns),
            key=lambda r: (r[0], r[1].key, r[2].dia_id),
        )
        texts = [
            _Text(ts, 0, *chats[talk.key], t.speaker == phone.owner, t.text, talk.guid(t.dia_id),
                  t.photos)
            for ts, talk, t in rows
        ]  # fmt: skip
        if ambiguous:
            own = writer.add_handle(people.owner_address)  # a note to self: the owner's handle
            writer.add_chat([own])
            namesake = writer.add_handle(people.namesake.emails[0])
            chat = writer.add_chat([namesake])
            texts += [_Text(ts, 1, chat, namesake, me, text) for me, text, ts in
                      namesake_texts(phone, seed)]  # fmt: skip
        for n, t in enumerate(sorted(texts, key=lambda t: (t.ts, t.kind))):
            writer.add_message(
                t.chat,
                t.text,
                from_me=t.from_me,
                handle=None if t.from_me else t.handle,
                ts=t.ts,
                guid=t.guid,
                attachments=[(f"IMG_{n:04d}.jpeg", "image/jpeg") for _ in t.photos],
            )
    contacts = folder / "AddressBook"
    cards = [people.cards[t.key] for t in phone.talks]
    if ambiguous:
        cards = [people.owner_card, *cards, people.namesake]
    write_addressbook(contacts, cards)
    return chat_db, contacts


def prepare_phone(phone: Phone, root: Path, *, ambiguous: bool = False) -> tuple[Path, Path]:
    """`root/<owner>/source/`: (re)written only when the phone's conversations changed; a
    changed source drops every index built from it."""
    base = root / phone.key
    stamp = base / "source" / "source.sha256"
    chat_db, contacts = base / "source" / "chat.db", base / "source" / "AddressBook"
    digest = phone.source_hash(ambiguous)
    if stamp.is_file() and stamp.read_text().strip() == digest and chat_db.is_file():
        return chat_db, contacts
    if base.exists():
        shutil.rmtree(base)
    chat_db, contacts = write_phone(phone, base / "source", ambiguous=ambiguous)
    stamp.write_text(digest + "\n")
    return chat_db, contacts


def summary(phones: Sequence[Phone], ambiguous: bool) -> dict[str, Any]:
    """What the report states: phones, conversations, texts, questions, dropped evidence."""
    questions = [q for p in phones for q in p.questions]
    return {
        "phones": {p.owner: [t.key for t in p.talks] for p in phones},
        "conversations": sum(len(p.talks) for p in phones),
        "turns": sum(len(t.turns) for p in phones for t in p.talks),
        "questions": len(questions),
        "without_evidence": sum(1 for q in questions if not q.answerable),
        "dropped_evidence_ids": [d for p in phones for t in p.talks for d in t.dropped_evidence],
        "names": "ambiguous (owner's card, a namesake, a name on no card)" if ambiguous
        else "plain",
    }  # fmt: skip
