"""Gold questions from the texting corpus's evidence ledger, in two styles.

First person is how the owner asks ("When did I tell Sam…", "What is my favourite movie?");
verbatim names the owner by their first name ("When did Jamie tell Sam…"), the way the real
question sets are written. Both styles share ids, wording, typos and evidence: only the
owner's words differ. A category is `<kind>/<tags>`: kind is what is asked (`when`: the day
it was texted; `open`: a fact or an opinion; `spread`: a story over several days), tags are
what makes it hard (`event_date`: a date in the question that is the event's, not the texts';
`duration`: "for 3 days"; `names`: names written in the messages, or a contact who shares the
owner's first name) or `plain`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from ingest.synthetic.texting_cast import ME, OWNER_FIRST
from ingest.synthetic.texting_episodes import MONTHS, Draft, number, question_date
from ingest.synthetic.texting_voice import typo

KINDS = ("when", "open", "spread")
TAGS = ("event_date", "duration", "names")
# How a question names each contact: (form, weight). Jamie Park always by full name: "Jamie"
# alone is the owner.
NAME_FORMS: dict[str, tuple[tuple[str, int], ...]] = {
    "sam": (("Sam", 15), ("Sam Whitaker", 3), ("Sammy", 2)),
    "priya": (("Priya", 6), ("Priya Raman", 1)),
    "leo": (("Leo", 6), ("Leo Marchetti", 1)),
    "nadia": (("Nadia", 6), ("Nadia Haddad", 1)),
    "jamie_p": (("Jamie Park", 1),),
    "mum": (("Mum", 1),),
}
# Slots whose values are names of places, bands, companies…: capitalised in a question.
PROPER = frozenset({"dest", "band", "place", "band2", "city", "far", "fest", "company", "area",
                    "area0", "city2", "team2", "far2", "book", "baby", "pet", "cat", "film",
                    "band3", "cup"})  # fmt: skip
TYPO_SHARE = 0.2  # questions with one typo
SLOPPY_SHARE = 0.15  # questions typed all lowercase without a question mark
_OWNER = {  # sentinel → (first person, verbatim); digits so typos never touch them
    "§1§": ("I", OWNER_FIRST),
    "§2§": ("me", OWNER_FIRST),
    "§3§": ("my", f"{OWNER_FIRST}'s"),
    "§4§": ("am", "is"),
    "§5§": ("do", "does"),
    "§6§": ("have", "has"),
}
_SLOT = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"[A-Za-z]{5,}")


@dataclass(frozen=True, slots=True)
class Scheduled:
    """A drafted episode once written: its days and the guids of its evidence messages."""

    draft: Draft
    texted: tuple[date, ...]  # local days of its evidence messages, in order
    evidence: tuple[str, ...]  # guids
    event: date | None = None  # a plan's day


def category(kind: str, tags: Iterable[str]) -> str:
    return f"{kind}/{'+'.join(sorted(set(tags))) or 'plain'}"


def pools(categories: Iterable[str | None]) -> dict[str, frozenset[str]]:
    """Pooled categories: each kind (when, open, spread) and each tag over all kinds."""
    cats = {c for c in categories if c and "/" in c}
    out: dict[str, frozenset[str]] = {}
    for kind in KINDS:
        out[kind] = frozenset(c for c in cats if c.split("/")[0] == kind)
    for tag in TAGS:
        out[tag] = frozenset(c for c in cats if tag in c.split("/")[1].split("+"))
    return {k: v for k, v in out.items() if v}


def _proper(value: str) -> str:
    return " ".join(w if w.isupper() else w[:1].upper() + w[1:] for w in value.split())


def _fields(ep: Scheduled, rng: random.Random) -> dict[str, str]:
    d = ep.draft
    them = rng.choices(*zip(*NAME_FORMS[d.person], strict=True))[0]
    told_by_me = d.teller == ME
    fields = {
        "S": "§1§" if told_by_me else them,
        "O": them if told_by_me else "§2§",
        "Os": them if told_by_me else "§1§",
        "Sp": "§3§" if told_by_me else f"{them}'s",
        "is": "§4§" if told_by_me else "is",
        "does": "§5§" if told_by_me else "does",
        "has": "§6§" if told_by_me else "has",
        "nq": number(d.n or 0, rng, words=0.4),
        "year": str(d.year or ""),
    }
    if ep.event is not None:
        prep, bare = question_date(ep.event, ep.texted[0], rng)
        fields["date"], fields["day"] = f"{prep} {bare}", bare
    for slot, value in d.values.items():
        fields[slot] = _proper(value) if slot in PROPER else value
    return fields


def _fill(template: str, fields: dict[str, str]) -> str:
    return _SLOT.sub(lambda m: fields[m[1]], template)


def _answer(ep: Scheduled, answer: Sequence[str]) -> list[str]:
    if not answer:  # a "when" question: the day it was texted
        day = ep.texted[0]
        return [MONTHS[day.month - 1], str(day.year)]
    values = {**ep.draft.values, "n": str(ep.draft.n)}
    return [_SLOT.sub(lambda m: values[m[1]], a) for a in answer]


def _typed(text: str, rng: random.Random, keep: set[str]) -> tuple[str, bool]:
    """One typo in a word of 5+ letters that is no name or value, in TYPO_SHARE of questions,
    and whether it is typed sloppily (lowercase, no question mark). The same draws whatever
    the style, so both styles of a question carry the same slips."""
    r_typo, r_sloppy = rng.random(), rng.random()
    words = [m for m in _WORD.finditer(text) if m.group(0).lower() not in keep]
    if r_typo < TYPO_SHARE and words:
        m = rng.choice(words)
        text = text[: m.start()] + typo(m.group(0), rng) + text[m.end() :]
    return text, r_sloppy < SLOPPY_SHARE


def build(episodes: Sequence[Scheduled], seed: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(first-person item, verbatim item) per question, in the CLI.md gold format."""
    rng = random.Random(f"casper-texting-questions:{seed}")
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for ep in episodes:
        for ask in ep.draft.asks:
            fields = _fields(ep, rng)
            keep = {w.lower() for v in fields.values() for w in re.findall(r"[A-Za-z]+", v)}
            text, sloppy = _typed(_fill(ask.text, fields), rng, keep)
            tags = set(ask.tags) | ({"names"} if ep.draft.person == "jamie_p" else set())
            typed = {
                "category": category(ask.kind, tags),
                "relevant_message_guids": list(ep.evidence),
                "expected": {"answer_contains": _answer(ep, ask.answer)},
            }
            first, verbatim = text, text
            for mark, (mine, named) in _OWNER.items():
                first, verbatim = first.replace(mark, mine), verbatim.replace(mark, named)
            if sloppy:
                first, verbatim = first.lower().rstrip("?"), verbatim.lower().rstrip("?")
            qid = f"tx-{len(out) + 1:03d}"
            out.append(
                (
                    {"id": qid, "question": first, **typed},
                    {"id": qid, "question": verbatim, **typed},
                )
            )
    return out
