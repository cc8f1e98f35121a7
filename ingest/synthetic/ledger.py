"""The generator's own bookkeeping of what it wrote: ground-truth facts and the gold question file.

Counts follow CLI.md: `received` = messages the person wrote anywhere, `sent` = my messages in 1:1
chats with them; tapbacks, system events, legacy SMS reactions, unsent and deleted rows never count.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingest.synthetic.scenes import Question

ME = "me"


@dataclass(slots=True)
class Rec:
    """One row the generator wrote, and what became of it."""

    key: str
    rowid: int
    guid: str
    chat: str
    who: str
    ts: float
    kind: str  # message | tapback | removal | event | legacy
    text: str = ""
    body: str = "none"
    attachments: int = 0
    status: str = "ok"  # ok | unsent | recently_deleted | hard_deleted
    edited: bool = False
    reply: bool = False

    @property
    def counts(self) -> bool:
        return self.kind == "message" and self.status == "ok"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def year(ts: float) -> str:
    return str(datetime.fromtimestamp(ts, UTC).year)


@dataclass(slots=True)
class Ledger:
    recs: dict[str, Rec]
    names: dict[str, str]  # person key → display name
    one_to_one: dict[str, str]  # 1:1 chat key → person key
    chat_names: dict[str, str]  # chat key → label
    handles: dict[str, list[str]]  # person key → handle addresses

    def person_facts(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for person, name in self.names.items():
            sent = [
                r
                for r in self.recs.values()
                if r.counts and r.who == ME and self.one_to_one.get(r.chat) == person
            ]
            received = [r for r in self.recs.values() if r.counts and r.who == person]
            both = sorted(r.ts for r in sent + received)
            out[name] = {
                "key": person,
                "handles": sorted(set(self.handles[person])),
                "sent": len(sent),
                "received": len(received),
                "first": iso(both[0]) if both else None,
                "last": iso(both[-1]) if both else None,
                "by_year": {
                    y: {
                        "sent": sum(year(r.ts) == y for r in sent),
                        "received": sum(year(r.ts) == y for r in received),
                    }
                    for y in sorted({year(t) for t in both})
                },
            }
        return out

    def chat_facts(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for chat, label in self.chat_names.items():
            rows = [r for r in self.recs.values() if r.chat == chat and r.counts]
            senders = Counter(self.names.get(r.who, r.who) for r in rows)
            out[chat] = {
                "name": label,
                "messages": len(rows),
                "by_sender": dict(sorted(senders.items())),
            }
        return out

    def facts(self, seed: int, toggles: dict[str, bool]) -> dict[str, Any]:
        rows = list(self.recs.values())
        visible = [r for r in rows if r.counts]
        kinds = Counter(r.kind for r in rows)
        status = Counter(r.status for r in rows)
        bodies = Counter(r.body for r in rows if r.status == "ok" and r.kind != "event")
        table_rows = sum(r.status != "hard_deleted" for r in rows)
        return {
            "seed": seed,
            "toggles": toggles,
            "definitions": "sent: my messages in 1:1 chats with the person; received: messages "
            "the person wrote anywhere; first/last: over those sent+received; "
            "years in UTC (no messages within 12 h of New Year)",
            "people": self.person_facts(),
            "chats": self.chat_facts(),
            "messages_visible": len(visible),
            "messages_by_me": sum(r.who == ME for r in visible),
            "coverage": {
                "first": iso(min(r.ts for r in visible)),
                "last": iso(max(r.ts for r in visible)),
            },
            "rows": {
                "message_table": table_rows,
                "tapbacks": kinds["tapback"],
                "tapback_removals": kinds["removal"],
                "system_events": kinds["event"],
                "legacy_reactions": kinds["legacy"],
                "unsent": status["unsent"],
                "recently_deleted": status["recently_deleted"],
                "hard_deleted": status["hard_deleted"],
                "edited": sum(r.edited for r in rows),
                "replies": sum(r.reply for r in rows),
                "with_attachments": sum(r.attachments > 0 for r in visible),
                "attachment_only": sum(r.attachments > 0 and not r.text for r in visible),
                "body_attributed_only": bodies["attributed"],
                "body_both": bodies["both"],
                "body_text_only": bodies["text"],
            },
            "keys": {r.key: r.guid for r in rows if not r.key.startswith("f")},
        }


def gold_lines(
    ledger: Ledger, questions: tuple[Question, ...], facts: dict[str, Any]
) -> list[dict[str, Any]]:
    """Gold items: planted-fact questions whose messages exist, then computed stats questions."""
    out = []
    for q in questions:
        guids = [ledger.recs[k].guid for k in q.keys if k in ledger.recs and ledger.recs[k].counts]
        if q.category != "unanswerable" and not guids:
            continue
        expected = {"answer_contains": list(q.answer)} if q.answer else None
        out.append(
            {
                "id": q.id,
                "question": q.question,
                "relevant_message_guids": guids,
                "category": q.category,
                "expected": expected,
            }
        )
    return out + stats_questions(facts)


def _stat(qid: str, question: str, answer: str, stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": question,
        "relevant_message_guids": [],
        "category": "stats",
        "expected": {"answer_contains": [answer], "stats": stats},
    }


def stats_questions(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """Stats questions whose expected numbers come from the ledger, not from Casper's code."""
    people = facts["people"]
    out = []
    for name, field, question in (
        ("Priya Natarajan", "received", "How many messages did Priya send me?"),
        ("Mom", "sent", "How many messages have I sent Mom?"),
        ("Sam Rivera", "received", "How many messages has Sam Rivera sent me in total?"),
    ):
        if name in people and people[name][field]:
            n = people[name][field]
            qid = f"stats-{people[name]['key']}-{field}"
            out.append(_stat(qid, question, str(n), {"person": name, field: n}))
    ranking = sorted(
        ((p["by_year"].get("2023", {}).get("sent", 0), name) for name, p in people.items()),
        reverse=True,
    )
    if ranking and ranking[0][0]:
        n, name = ranking[0]
        out.append(
            _stat(
                "stats-top-2023",
                "Who did I text most in 2023?",
                name.split()[0],
                {
                    "year": 2023,
                    "metric": "sent",
                    "person": name,
                    "sent": n,
                    "ranking": [[nm, c] for c, nm in ranking],
                },
            )
        )
    crew = facts["chats"].get("climbing")
    if crew and crew["by_sender"]:
        top = max(crew["by_sender"].items(), key=lambda kv: (kv[1], kv[0]))
        out.append(
            _stat(
                "stats-crew-top",
                "Who sends the most messages in the Climbing crew?",
                top[0].split()[0],
                {
                    "chat": crew["name"],
                    "person": top[0],
                    "count": top[1],
                    "by_sender": crew["by_sender"],
                },
            )
        )
    return out


def write_gold(path: Path, lines: list[dict[str, Any]]) -> Path:
    """One JSON object per line, in the CLI.md gold format."""
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    return path
