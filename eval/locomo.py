"""LoCoMo → one real chat.db per conversation (+ AddressBook card) and gold questions.

speaker_a is the phone's owner ("me"), speaker_b a contact with a handle unique to the
conversation. The data file is CC BY-NC: it is read in place and never copied into the repo.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import shutil
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from casper.errors import CasperError
from eval.gold import GoldItem
from eval.metrics import dedupe
from ingest.synthetic import Card, ChatDbWriter, write_addressbook

log = logging.getLogger(__name__)

CONVERTER_VERSION = "locomo-v1"
LOCOMO_TZ = "America/Los_Angeles"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
TURN_GAP_S = 30.0
JITTER_S = 10.0
# Integer ids in the data → meaning (task_eval/evaluation.py; NOT the paper's list order).
CATEGORIES: dict[int, str] = {
    4: "single-hop",
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    5: "adversarial",
}
POOLED = "1-4 pooled"
POOLED_MEMBERS = frozenset(CATEGORIES[c] for c in (1, 2, 3, 4))
# Published DRAGON dialog-level recall (ACL 2024 Table 3), overall, as fractions.
DRAGON_RECALL: dict[int, float] = {5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827}
# Its per-category columns (k = 5, 10, 25, 50), as the paper labels them.
DRAGON_BY_CATEGORY: dict[str, tuple[float, ...]] = {
    "single-hop": (0.680, 0.777, 0.871, 0.911),
    "multi-hop": (0.354, 0.466, 0.625, 0.730),
    "temporal": (0.704, 0.773, 0.835, 0.896),
    "open-domain": (0.331, 0.408, 0.526, 0.617),
    "adversarial": (0.439, 0.547, 0.663, 0.725),
}

# Auxiliaries before the owner's name, in their first-person form ("did Caroline" → "did I").
_AUX = {
    "did": "did",
    "does": "do",
    "do": "do",
    "is": "am",
    "was": "was",
    "has": "have",
    "have": "have",
    "had": "had",
    "would": "would",
    "will": "will",
    "can": "can",
    "could": "could",
    "should": "should",
    "might": "might",
    "may": "may",
}
_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True)
class Turn:
    """One LoCoMo turn as a message."""

    dia_id: str
    speaker: str
    text: str  # caption already appended
    ts: datetime  # aware, in LOCOMO_TZ
    has_image: bool


@dataclass(frozen=True, slots=True)
class Conversation:
    """A converted conversation: turns, questions and what normalisation dropped."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[Turn, ...]
    questions: tuple[GoldItem, ...]
    dropped_evidence: tuple[str, ...]
    source_hash: str

    @property
    def handle(self) -> str:
        return f"{self.speaker_b.lower()}.{self.sample_id}@locomo.invalid"

    def guid(self, dia_id: str) -> str:
        return message_guid(self.sample_id, dia_id)


def dragon_reference() -> dict[str, Any]:
    """The published baseline in run-document form (overall and per category)."""
    per_k = {k: f"message_recall@{k}" for k in DRAGON_RECALL}
    return {
        "name": "DRAGON, LoCoMo dialog units (ACL 2024 Table 3)",
        **{per_k[k]: v for k, v in DRAGON_RECALL.items()},
        "by_category": {
            cat: {per_k[k]: v for k, v in zip(per_k, values, strict=True)}
            for cat, values in DRAGON_BY_CATEGORY.items()
        },
    }


def message_guid(sample_id: str, dia_id: str) -> str:
    """Deterministic guid for a turn: conv-26 + D3:7 → locomo-conv-26-D3-7."""
    return f"locomo-{sample_id}-{dia_id.replace(':', '-')}"


_GUID_SESSION = re.compile(r"^(?P<conv>.+)-D(?P<session>\d+)-\d+$")


def session_of_guid(guid: str) -> str | None:
    """The dataset session a message guid belongs to: locomo-conv-26-D3-7 →
    `locomo-conv-26#session_3` (REALTALK's guids end the same way), None for any other guid
    (a filler text of the ambiguous phones). LoCoMo and REALTALK number sessions `session_N`
    and a turn's `dia_id` `D<N>:<i>`, which is what published session-level recall counts."""
    m = _GUID_SESSION.match(guid)
    return f"{m['conv']}#session_{int(m['session'])}" if m else None


def normalise_dia_id(token: str) -> str | None:
    """`D30:05` → `D30:5`; anything not shaped `D<n>:<i>` → None."""
    m = _DIA_ID.match(token.strip())
    return f"D{int(m[1])}:{int(m[2])}" if m else None


def normalise_evidence(raw: Sequence[Any], known: Collection[str]) -> tuple[list[str], list[str]]:
    """(resolved dia_ids, dropped tokens): split on `;`/`,`/whitespace, unpad, drop unknowns."""
    ids: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for token in _SPLIT.split(str(entry).strip()):
            if not token:
                continue
            norm = normalise_dia_id(token)
            if norm is None or norm not in known:
                dropped.append(token)
            else:
                ids.append(norm)
    return dedupe(ids), dropped


def _cased(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def first_person(question: str, owner: str) -> str:
    """Ask about the phone's owner the way they would: "When did Caroline go…" → "When did I go…".

    LoCoMo names both speakers in the third person, but Casper shows the owner's messages as
    "me"; rewriting the owner's name keeps question and text referring to them the same way.
    """
    name = re.escape(owner)
    q = re.sub(rf"\b{name}['’](s\b|(?=\s))", "my", question)  # Ana's, James' → my
    q = re.sub(
        rf"\b({'|'.join(_AUX)})\s+{name}\b",
        lambda m: f"{_cased(_AUX[m[1].lower()], m[1])} I",
        q,
        flags=re.IGNORECASE,
    )
    q = re.sub(rf"^{name}\b", "I", q)
    q = re.sub(rf"\b(and|or)\s+{name}\b", r"\1 I", q)
    return re.sub(rf"\b{name}\b", "me", q)


def parse_session_time(text: str, tz: ZoneInfo) -> datetime:
    """`1:56 pm on 8 May, 2023` → an aware datetime in `tz` (naive local time, pinned zone)."""
    return datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=tz)


def _hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def _turns(sample_id: str, conv: dict[str, Any], tz: ZoneInfo) -> list[Turn]:
    sessions = sorted(
        (int(m[1]), value)
        for key, value in conv.items()
        if (m := _SESSION.match(key)) and isinstance(value, list)
    )
    turns: list[Turn] = []
    for number, session in sessions:
        start = parse_session_time(conv[f"session_{number}_date_time"], tz)
        rng = random.Random(f"{sample_id}:{number}")
        offset = 0.0
        for i, turn in enumerate(session):
            if i:
                offset += TURN_GAP_S + rng.uniform(-JITTER_S, JITTER_S)
            text = str(turn["text"])
            caption = turn.get("blip_caption")
            if caption:
                text = f"{text} [photo: {caption}]"
            ts = start + timedelta(seconds=round(offset, 3))
            turns.append(
                Turn(str(turn["dia_id"]), str(turn["speaker"]), text, ts, bool(turn.get("img_url")))
            )
    return turns


def convert(
    raw: dict[str, Any], tz_name: str = LOCOMO_TZ, *, verbatim: bool = False
) -> Conversation:
    """One LoCoMo sample → Conversation (questions carry message guids, not dia_ids).

    Questions are put in the owner's first person unless `verbatim`.
    """
    sample_id = str(raw["sample_id"])
    conv = raw["conversation"]
    tz = ZoneInfo(tz_name)
    turns = _turns(sample_id, conv, tz)
    known = {t.dia_id for t in turns}
    questions: list[GoldItem] = []
    dropped_all: list[str] = []
    for i, qa in enumerate(raw.get("qa", [])):
        ids, dropped = normalise_evidence(qa.get("evidence", []), known)
        for token in dropped:
            log.info("%s q%d: unresolvable evidence id %r dropped", sample_id, i, token)
        dropped_all += dropped
        code = int(qa["category"])
        expected: dict[str, Any]
        if code == 5:
            expected = {"abstain": True}
        else:
            expected = {"answer_contains": [str(qa.get("answer", "")).split(";")[0].strip()]}
        text = str(qa["question"])
        questions.append(
            GoldItem(
                id=f"{sample_id}-q{i}",
                question=text if verbatim else first_person(text, str(conv["speaker_a"])),
                relevant=tuple(message_guid(sample_id, d) for d in ids),
                category=CATEGORIES.get(code, str(code)),
                expected=expected,
                meta={"locomo_category": code, "evidence": ids},
            )
        )
    source = {"v": CONVERTER_VERSION, "tz": tz_name, "sample_id": sample_id, "conversation": conv}
    return Conversation(
        sample_id,
        str(conv["speaker_a"]),
        str(conv["speaker_b"]),
        tuple(turns),
        tuple(questions),
        tuple(dropped_all),
        _hash(source),
    )


def default_locomo_path() -> Path | None:
    """$CASPER_LOCOMO, else ../shared/fixtures/locomo/locomo10.json beside this checkout."""
    env = os.environ.get("CASPER_LOCOMO")
    if env:
        return Path(env).expanduser()
    candidate = Path(__file__).resolve().parents[2] / "shared/fixtures/locomo/locomo10.json"
    return candidate if candidate.is_file() else None


def load_locomo(
    path: Path | None, conversations: int | None = None, *, verbatim: bool = False
) -> list[Conversation]:
    """Read and convert the LoCoMo file (optionally only the first N conversations)."""
    hint = "pass --locomo FILE or set CASPER_LOCOMO to the path of locomo10.json"
    if path is None:
        raise CasperError("no LoCoMo data file found", hint=hint)
    if not Path(path).is_file():
        raise CasperError(f"LoCoMo data file not found: {path}", hint=hint)
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CasperError(f"cannot read LoCoMo file {path}: {exc}", hint=hint) from None
    if not isinstance(data, list) or not all(isinstance(x, dict) and "qa" in x for x in data):
        raise CasperError(f"{path} is not in the LoCoMo format", hint=hint)
    samples = data[:conversations] if conversations else data
    return [convert(sample, verbatim=verbatim) for sample in samples]


def write_corpus(conv: Conversation, folder: Path) -> tuple[Path, Path]:
    """Write `folder/chat.db` (Apple schema) and `folder/AddressBook`; returns both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    chat_db = folder / "chat.db"
    chat_db.unlink(missing_ok=True)
    with ChatDbWriter(chat_db, seed=int(conv.source_hash[:8], 16)) as writer:
        handle = writer.add_handle(conv.handle)
        chat = writer.add_chat([handle])
        for n, turn in enumerate(conv.turns):
            from_me = turn.speaker == conv.speaker_a
            attachments = [(f"IMG_{n:04d}.jpeg", "image/jpeg")] if turn.has_image else []
            writer.add_message(
                chat,
                turn.text,
                from_me=from_me,
                handle=None if from_me else handle,
                ts=turn.ts,
                guid=conv.guid(turn.dia_id),
                attachments=attachments,
            )
    contacts = folder / "AddressBook"
    write_addressbook(contacts, [Card(first=conv.speaker_b, emails=(conv.handle,))])
    return chat_db, contacts


def prepare_corpus(conv: Conversation, root: Path) -> tuple[Path, Path]:
    """`root/<sample_id>/source/`: (re)written only when the conversation's hash changed.

    A changed source invalidates every index built from it, so the whole folder is cleared.
    """
    base = root / conv.sample_id
    stamp = base / "source" / "source.sha256"
    chat_db, contacts = base / "source" / "chat.db", base / "source" / "AddressBook"
    if stamp.is_file() and stamp.read_text().strip() == conv.source_hash and chat_db.is_file():
        return chat_db, contacts
    if base.exists():
        shutil.rmtree(base)
    chat_db, contacts = write_corpus(conv, base / "source")
    stamp.write_text(conv.source_hash + "\n")
    return chat_db, contacts


def summary(convs: Sequence[Conversation]) -> dict[str, Any]:
    """Counts the report states: questions, unscorable ones, dropped evidence ids, duplicates."""
    questions = [q for c in convs for q in c.questions]
    pairs = [(q.id.rsplit("-q", 1)[0], q.question) for q in questions]
    return {
        "conversations": len(convs),
        "turns": sum(len(c.turns) for c in convs),
        "questions": len(questions),
        "without_evidence": sum(1 for q in questions if not q.answerable),
        "dropped_evidence_ids": [i for c in convs for i in c.dropped_evidence],
        "duplicate_questions": len(pairs) - len(set(pairs)),
    }
