"""A realistic two-person texting corpus: chat.db, AddressBook, evidence ledger, gold questions.

Built to look like real phones rather than LoCoMo: mostly short turns (1–8 words), lowercase,
typos, u/tmrw/lol, emoji and tapbacks, names in greetings, the owner's first name shared with
a contact, plans texted weeks before their day, past years told later, durations, stories over
several days, opinions, and thousands of distractor messages that share their words. Every
evidence message is in the ledger (`evidence.json`: episode, guids, the fact, its days) and
the questions (`gold.jsonl` first person, `gold-verbatim.jsonl` naming the owner) are made
from it. Seeded and offline: the same seed writes the same bytes' worth of rows and guids.
"""

from __future__ import annotations

import bisect
import json
import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from ingest.synthetic import texting_questions, texting_talk
from ingest.synthetic.addressbook import write_addressbook
from ingest.synthetic.apple import Body
from ingest.synthetic.ledger import Ledger, Rec, write_gold
from ingest.synthetic.texting_cast import (
    CHATS,
    CONTACTS,
    ME,
    OWNER_CALLS,
    OWNER_EMAIL,
    OWNER_FIRST,
    TIMEZONE,
    Chat,
    contact,
)
from ingest.synthetic.texting_episodes import (
    Draft,
    draft_all,
    number,
    plan_days,
    plan_phrase,
    year_phrase,
)
from ingest.synthetic.texting_questions import Scheduled, pools
from ingest.synthetic.texting_voice import VOICES
from ingest.synthetic.writer import ChatDbWriter

SEED = 19  # fixed: the texting set's chat.db and questions are the same on every machine
TZ = ZoneInfo(TIMEZONE)
PAST_TOLD_FROM = date(2022, 1, 1)  # past years are told from here on
_HOURS = {7: 1, 8: 2, 9: 2, 10: 2, 11: 2, 12: 4, 13: 3, 14: 2, 15: 2, 16: 3, 17: 5, 18: 6,
          19: 7, 20: 8, 21: 8, 22: 6, 23: 3}  # fmt: skip
_TAPBACKS = {2000: 4.0, 2001: 3.0, 2003: 3.0, 2004: 1.0, 2005: 0.5, 2002: 0.3}
QUIET_S = 2 * 3600  # no filler within 2 h of an episode's messages in the same chat

__all__ = ["SEED", "TIMEZONE", "OWNER_FIRST", "TextingCorpus", "build_texting_corpus", "pools"]


@dataclass(frozen=True, slots=True)
class TextingCorpus:
    chat_db: Path
    contacts: Path  # the AddressBook folder
    gold: Path  # first-person questions (CLI.md gold format)
    gold_verbatim: Path  # the same questions naming the owner
    evidence: Path  # the ledger of evidence: episode → guids, fact, days
    ledger: Ledger = field(compare=False, repr=False)
    episodes: tuple[Scheduled, ...] = field(compare=False, repr=False)


@dataclass(slots=True)
class _Op:
    ts: float
    seq: int
    chat: str
    who: str
    text: str = ""
    key: str = ""
    tap: int = 0  # a tapback of this kind on `target`
    target: str = ""
    attach: tuple[tuple[str, str], ...] = ()


def build_texting_corpus(dest: Path, *, seed: int = SEED, scale: float = 1.0) -> TextingCorpus:
    """Write chat.db, AddressBook, evidence.json, gold.jsonl and gold-verbatim.jsonl to `dest`."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    timeline = _Timeline(seed)
    episodes = [timeline.add_episode(d) for d in draft_all(timeline.rng("drafts"))]
    for chat in CHATS:
        timeline.add_filler(chat, round(chat.volume * scale))
    chat_db = dest / "chat.db"
    chat_db.unlink(missing_ok=True)
    with ChatDbWriter(chat_db, seed=seed, owner=OWNER_EMAIL) as writer:
        recs = _write(writer, timeline.ordered(), timeline.rng("bodies"))
    contacts = dest / "AddressBook"
    write_addressbook(contacts, [c.card for c in CONTACTS if c.card is not None])
    ledger = Ledger(
        recs=recs,
        names={c.key: c.name for c in CONTACTS},
        one_to_one={c.key: c.members[0] for c in CHATS if not c.is_group},
        chat_names={c.key: c.name or contact(c.members[0]).name for c in CHATS},
        handles={c.key: [c.handle] for c in CONTACTS},
    )
    scheduled = tuple(
        Scheduled(ep.draft, ep.texted, tuple(recs[k].guid for k in ep.keys), ep.event)
        for ep in episodes
    )
    pairs = texting_questions.build(scheduled, seed)
    gold = write_gold(dest / "gold.jsonl", [first for first, _ in pairs])
    verbatim = write_gold(dest / "gold-verbatim.jsonl", [named for _, named in pairs])
    evidence = dest / "evidence.json"
    evidence.write_text(json.dumps(_evidence(scheduled, pairs, seed), indent=1) + "\n", "utf-8")
    return TextingCorpus(chat_db, contacts, gold, verbatim, evidence, ledger, scheduled)


@dataclass(slots=True)
class _Episode:
    draft: Draft
    keys: list[str]  # ledger keys of its evidence messages
    texted: tuple[date, ...]
    event: date | None


def _local(day: date, seconds: float) -> float:
    """Unix time of `seconds` after local midnight of `day` (the owner's time zone)."""
    midnight = datetime(day.year, day.month, day.day, tzinfo=TZ)
    return midnight.timestamp() + seconds


class _Timeline:
    """Every row to write, in any order; `ordered()` sorts them by time."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.ops: list[_Op] = []
        self.busy: dict[str, set[date]] = {}  # chat → days an episode uses
        self.quiet: dict[str, list[float]] = {}  # chat → sorted times of episode messages
        self._rngs: dict[str, random.Random] = {}

    def rng(self, name: str) -> random.Random:
        if name not in self._rngs:
            self._rngs[name] = random.Random(f"casper-texting:{self.seed}:{name}")
        return self._rngs[name]

    def _add(self, ts: float, chat: str, who: str, **kw: Any) -> _Op:
        op = _Op(ts, len(self.ops), chat, who, **kw)
        self.ops.append(op)
        return op

    def ordered(self) -> list[_Op]:
        return sorted(self.ops, key=lambda o: (o.ts, o.seq))

    # -- evidence ---------------------------------------------------------------------------

    def _first_day(self, d: Draft, chat: Chat, rng: random.Random) -> date:
        start, end = date.fromisoformat(chat.start), date.fromisoformat(chat.end)
        if d.family == "past":
            start = max(start, PAST_TOLD_FROM)
        span = max(ln.day for ln in d.item.lines)
        busy = self.busy.setdefault(chat.key, set())
        for _ in range(2000):
            first = start + timedelta(days=rng.randrange((end - start).days - span))
            if d.plan_style == "next_day" and first.weekday() < 4:
                continue  # "next fri" is texted on a Friday to Sunday: it means next week's
            days = {first + timedelta(days=ln.day + j) for ln in d.item.lines for j in (-1, 0, 1)}
            if not days & busy:
                busy |= days
                return first
        raise RuntimeError(f"no free days for {d.id} in {chat.key}")  # the cast is too busy

    def add_episode(self, d: Draft) -> _Episode:
        rng = self.rng(f"episode:{d.id}")
        chat = next(c for c in CHATS if c.members == (d.person,))
        first = self._first_day(d, chat, rng)
        event = plan_days(d.plan_style, first, d.offset) if d.plan_style else None
        fills = {
            **d.values,
            "n": number(d.n or 0, rng, words=0.25),
            "yearly": year_phrase(d.year, rng) if d.year else "",
            "when": plan_phrase(d.plan_style, event, rng) if d.plan_style and event else "",
        }
        keys: list[str] = []
        days: list[date] = []
        clock: dict[int, float] = {}
        for i, ln in enumerate(d.item.lines):
            who = d.teller if ln.who == "t" else d.other
            said_to = d.other if ln.who == "t" else d.teller
            you = rng.choice(OWNER_CALLS if said_to == ME else contact(said_to).calls)
            text = ln.text.format_map({**fills, "you": you})
            voice = VOICES["me" if who == ME else contact(who).voice]
            if ln.day not in clock:
                hour = rng.choices(list(_HOURS), list(_HOURS.values()))[0]
                clock[ln.day] = hour * 3600 + rng.randrange(3000)
            else:
                clock[ln.day] += rng.randint(20, 300)
            day = first + timedelta(days=ln.day)
            ts = _local(day, clock[ln.day])
            key = f"{d.id}:{i}"
            self._add(ts, chat.key, who, text=voice.case(text), key=key)
            bisect.insort(self.quiet.setdefault(chat.key, []), ts)
            if ln.tap and rng.random() < 0.6:
                kind = rng.choice((2000, 2004))
                self._add(ts + rng.randint(10, 400), chat.key, said_to, tap=kind, target=key)
            if ln.ev:
                keys.append(key)
                days.append(day)
        return _Episode(d, keys, tuple(days), event)

    # -- filler -----------------------------------------------------------------------------

    def _near_episode(self, chat: str, t0: float, t1: float) -> bool:
        times = self.quiet.get(chat, [])
        i = bisect.bisect_left(times, t0 - QUIET_S)
        return i < len(times) and times[i] <= t1 + QUIET_S

    def add_filler(self, chat: Chat, target: int) -> None:
        """Small-talk sessions on random days until `target` messages are written."""
        rng = self.rng(f"filler:{chat.key}")
        start, end = date.fromisoformat(chat.start), date.fromisoformat(chat.end)
        written = attempts = 0
        while written < target and attempts < 50 * max(target, 1):
            attempts += 1
            day = start + timedelta(days=rng.randrange((end - start).days + 1))
            hour = rng.choices(list(_HOURS), list(_HOURS.values()))[0]
            t = _local(day, hour * 3600 + rng.randrange(3600))
            lines, clock, last = [], t, None
            for speaker, text in texting_talk.session(rng, chat.flavour):
                if last is not None:
                    clock += rng.randint(4, 40) if speaker == last else rng.randint(15, 300)
                    if rng.random() < 0.05:
                        clock += rng.randint(1800, 7200)  # "sorry was driving"
                lines.append((clock, speaker, text))
                last = speaker
            if not lines or self._near_episode(chat.key, lines[0][0], lines[-1][0]):
                continue
            written += self._emit(rng, chat, lines)

    def _emit(self, rng: random.Random, chat: Chat, lines: list[tuple[float, str, str]]) -> int:
        pool = [ME, *chat.members]
        weights = [1.5 if p == ME else contact(p).chattiness for p in pool]
        a = rng.choices(pool, weights)[0] if chat.is_group else rng.choice(pool)
        others = [(p, w) for p, w in zip(pool, weights, strict=True) if p != a]
        b = rng.choices([p for p, _ in others], [w for _, w in others])[0]
        for ts, speaker, text in lines:
            who, to = (a, b) if speaker == "a" else (b, a)
            you = rng.choice(OWNER_CALLS if to == ME else contact(to).calls)
            if chat.is_group and to != ME and rng.random() < 0.3:
                you = rng.choice(("guys", "lads", "all"))
            voice = VOICES["me" if who == ME else contact(who).voice]
            text = voice.apply(text.replace("{you}", you), rng)
            op = self._add(ts, chat.key, who, text=text, key=f"f{len(self.ops)}")
            r_photo, r_caption, r_tap = rng.random(), rng.random(), rng.random()
            if r_photo < 0.015:
                op.attach = ((f"IMG_{rng.randint(1000, 9999)}.HEIC", "image/heic"),)
                op.text = "" if r_caption < 0.6 else op.text
            if r_tap < 0.035:
                kind = rng.choices(list(_TAPBACKS), list(_TAPBACKS.values()))[0]
                reactor = rng.choice([p for p in pool if p != who])
                self._add(ts + rng.randint(10, 600), chat.key, reactor, tap=kind, target=op.key)
        return len(lines)


def _write(writer: ChatDbWriter, ops: list[_Op], rng: random.Random) -> dict[str, Rec]:
    handles = {c.key: writer.add_handle(c.handle, "iMessage", "gb") for c in CONTACTS}
    chats = {
        c.key: writer.add_chat([handles[m] for m in c.members], display_name=c.name) for c in CHATS
    }
    recs: dict[str, Rec] = {}
    for op in ops:
        handle = None if op.who == ME else handles[op.who]
        if op.tap:
            target = recs[op.target]
            body: Body = "both"
            row = writer.add_reaction(
                target.guid, op.tap, from_me=op.who == ME, handle=handle, ts=op.ts,
                chat=chats[op.chat], body=body,
            )  # fmt: skip
            key = f"tap{op.seq}"
            recs[key] = Rec(key, row[0], row[1], op.chat, op.who, op.ts, "tapback", body=body)
            continue
        r = rng.random()
        body = "attributed" if r < 0.25 else "both" if r < 0.9 else "text"
        row = writer.add_message(
            chats[op.chat], op.text, from_me=op.who == ME, handle=handle, ts=op.ts, body=body,
            attachments=op.attach,
        )  # fmt: skip
        recs[op.key] = Rec(
            op.key, row[0], row[1], op.chat, op.who, op.ts, "message", text=op.text, body=body,
            attachments=len(op.attach),
        )  # fmt: skip
    return recs


def _counts(d: Draft) -> bool:
    """Whether the episode's texts or questions hold its number {n}."""
    texts = [ln.text for ln in d.item.lines] + [q.text for q in d.item.asks]
    return any("{n}" in t or "{nq}" in t for t in texts)


def _evidence(
    episodes: tuple[Scheduled, ...], pairs: list[tuple[dict[str, Any], dict[str, Any]]], seed: int
) -> dict[str, Any]:
    """The ledger of evidence: per episode who told what, when, and in which messages."""
    asked: dict[tuple[str, ...], list[str]] = {}
    for first, _ in pairs:
        asked.setdefault(tuple(first["relevant_message_guids"]), []).append(first["id"])
    return {
        "seed": seed,
        "timezone": TIMEZONE,
        "owner": OWNER_FIRST,
        "episodes": [
            {
                "id": ep.draft.id,
                "person": ep.draft.person,
                "family": ep.draft.family,
                "teller": ep.draft.teller,
                "fact": {
                    **ep.draft.values,
                    **({"n": ep.draft.n} if _counts(ep.draft) else {}),
                    **({"year": ep.draft.year} if ep.draft.year else {}),
                    **({"event_date": ep.event.isoformat()} if ep.event else {}),
                },
                "texted": [d.isoformat() for d in ep.texted],
                "evidence": list(ep.evidence),
                "questions": asked.get(ep.evidence, []),
            }
            for ep in episodes
        ],
    }
