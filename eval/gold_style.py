"""A gold-style question file over the synthetic demo corpus, generated from its ledger.

The real 679-question set (kept outside the repo) asks about everyday events in two-person
chats, naming the person and a numeric day-first date: "What did Paola have in math class on
17.01.2024?", "When did Fahim visit the natural history museum?". This writes questions of the
same shape over the demo corpus, so the harness can measure what the real set measures without
the real data:

- `dated-dot` / `dated-slash`: a person, an everyday event (a show, a restaurant, a book, a
  chore, ...) and the day as 17.01.2024 or 17/01/2024 (day-first, as a British or German user
  writes; a month-first locale misreads the slashed ones whose day is 12 or less);
- `when`: a person and an event that happened on one day only, no date.

Each category carries the name form the question uses (`/first`, `/full`, `/nickname`): the
card's nickname ("Sammy", "Pri", "Mom") must find the person as well as their first name.

Nothing is typed by hand but the question templates: who, when, which messages answer (the
relevant guids) and the answer strings come from the generator's ledger (every row it wrote).
The events are the small-talk slot values (`ingest.synthetic.smalltalk.SLOTS`) found in the
1:1 chats' messages. Regenerate with `python -m eval.gold_style [OUT]` (deterministic);
measure with `python -m eval.gold_style --run HOME` (index + `casper eval` per locale).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ingest.synthetic as synthetic  # `synthetic.build_demo_corpus`: the tests replace it
from ingest.synthetic.cast import PEOPLE
from ingest.synthetic.smalltalk import SLOTS

DEFAULT_OUT = Path(__file__).parent / "gold_style.jsonl"
SEED = 10  # fixed: the gold-style set is the same on every machine

# kind → (question about one day, question with no date). {who} is the chat partner as the
# question calls them, {date} the day, {value} the event.
TEMPLATES: dict[str, tuple[str, str]] = {
    "show": ("What show did {who} talk about on {date}?", "When did {who} talk about {value}?"),
    "spot": ("Which place came up with {who} on {date}?", "When did {who} mention {value}?"),
    "food": ("What did {who} want to eat on {date}?", "When did {who} want {value}?"),
    "book": ("What book did {who} mention on {date}?", "When did {who} bring up {value}?"),
    "activity": ("What was {who} up to on {date}?", "When did {who} do {value}?"),
    "chore": ("What did {who} have to do on {date}?", "When did {who} have to {value}?"),
    "weather": ("What was the weather like for {who} on {date}?", ""),
    "team": (
        "Which team did {who} talk about on {date}?",
        "When did {who} talk about the {value}?",
    ),
    "crag": ("Where did {who} want to climb on {date}?", "When did {who} talk about {value}?"),
}
# Slot values too generic to be an event ("nothing honestly") or that other words contain.
SKIP_VALUES = frozenset({"nothing honestly", "laundry lol", "thai", "indian", "pho"})
PER_CHAT_KIND = 5  # dated questions per (person, kind): enough to spread over ~200 questions


def _slot_patterns() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    out: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for kind in TEMPLATES:
        for value in SLOTS[kind]:
            if value not in SKIP_VALUES:
                pattern = re.compile(rf"(?<!\w){re.escape(value.lower())}(?!\w)")
                out.setdefault(kind, []).append((value, pattern))
    return out


def _name_forms(card: Any, display: str) -> list[tuple[str, str]]:
    """(kind, name) a question may call the person by: first name, full name, nickname."""
    if card is None:
        return []
    forms = []
    if card.first:
        forms.append(("first", card.first))
    if card.first and card.last:
        forms.append(("full", display))
    if card.nickname:
        forms.append(("nickname", card.nickname))
    return forms


def _day(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)  # the demo corpus counts days in UTC


def _date_text(when: datetime, style: str) -> str:
    sep = "." if style == "dot" else "/"
    return f"{when.day:02d}{sep}{when.month:02d}{sep}{when.year}"


def build_questions(ledger: Any, people: dict[str, Any], seed: int = SEED) -> list[dict[str, Any]]:
    """Gold items (CLI.md format) from the ledger of a demo corpus and its cast."""
    rng = random.Random(seed)
    patterns = _slot_patterns()
    partner = {chat: p for chat, p in ledger.one_to_one.items() if people[p].card is not None}
    # (person, kind) → day → [(rec, value)], and (person, kind, value) → days it came up, over
    # all of a person's 1:1 chats (Sam has two: email, then phone)
    found: dict[tuple[str, str], dict[str, list[tuple[Any, str]]]] = defaultdict(dict)
    days_of: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for rec in sorted(ledger.recs.values(), key=lambda r: (r.ts, r.rowid)):
        if not rec.counts or rec.chat not in partner or not rec.text:
            continue
        text = rec.text.lower()
        for kind, values in patterns.items():
            for value, pattern in values:
                if pattern.search(text):
                    day = _day(rec.ts).date().isoformat()
                    who = partner[rec.chat]
                    found[(who, kind)].setdefault(day, []).append((rec, value))
                    days_of[(who, kind, value)].add(day)
    out: list[dict[str, Any]] = []
    for (who, kind), by_day in sorted(found.items()):
        person = people[who]
        forms = _name_forms(person.card, person.name)
        if not forms:
            continue
        days = sorted(by_day)
        for day in sorted(rng.sample(days, min(PER_CHAT_KIND, len(days)))):
            rows = by_day[day]
            name_kind, name = rng.choice(forms)
            style = rng.choice(("dot", "slash"))
            when = _day(rows[0][0].ts)
            question = TEMPLATES[kind][0].format(who=name, date=_date_text(when, style))
            out.append(_item(f"dated-{style}/{name_kind}", question, rows))
        if not TEMPLATES[kind][1]:
            continue
        once = sorted(
            v for (p, k, v), d in days_of.items() if (p, k) == (who, kind) and len(d) == 1
        )
        for value in rng.sample(once, min(2, len(once))):
            (day,) = days_of[(who, kind, value)]
            rows = [(r, v) for r, v in by_day[day] if v == value]
            name_kind, name = rng.choice(forms)
            question = TEMPLATES[kind][1].format(who=name, value=value)
            out.append(_item(f"when/{name_kind}", question, rows))
    for i, item in enumerate(out, start=1):
        item["id"] = f"gs-{i:03d}"
    return [{"id": x.pop("id"), **x} for x in out]


def _item(category: str, question: str, rows: Iterable[tuple[Any, str]]) -> dict[str, Any]:
    rows = list(rows)
    return {
        "id": "",
        "question": question,
        "relevant_message_guids": list(dict.fromkeys(r.guid for r, _ in rows)),
        "category": category,
        "expected": {"answer_contains": sorted({v for _, v in rows})},
    }


def generate(out: Path = DEFAULT_OUT, work: Path | None = None) -> list[dict[str, Any]]:
    """Build the demo corpus (seed 7, full scale) and write its gold-style questions to `out`."""
    with tempfile.TemporaryDirectory(prefix="casper-gold-style-") as tmp:
        corpus = synthetic.build_demo_corpus(Path(work or tmp) / "source")
        items = build_questions(corpus.ledger, {p.key: p for p in PEOPLE})
    header = (
        "# Gold-style questions over the synthetic demo corpus (`casper demo`, seed 7), generated "
        "by `python -m eval.gold_style` from the corpus ledger. Index the corpus with timezone "
        '= "UTC", then: casper eval --dataset eval/gold_style.jsonl\n'
    )
    lines = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items)
    Path(out).write_text(header + lines, "utf-8")
    return items


LOCALE = "en_GB"  # the dates are day-first: the locale `--dataset gold-style` reads them in
LOCALES = ("en_US", "en_GB", "de_DE")
KS = (5, 10, 25)


def run(home: Path, locales: Iterable[str] = LOCALES) -> list[str]:
    """The whole measurement through the CLI, as a user would: build the demo corpus into
    `home`, `casper index` it (UTC, no rerank), then `casper eval --dataset` this file once per
    locale. Returns the table rows (message recall@5/10/25 in %, per run and locale)."""
    home = Path(home)
    corpus = synthetic.build_demo_corpus(home / "src")
    settings = {
        "chat_db": str(corpus.chat_db),
        "contacts": str(corpus.contacts),
        "timezone": "UTC",  # the ledger's days are UTC days
        "rerank": False,
    }
    casper = [sys.executable, "-m", "casper"]
    rows = []
    for i, locale in enumerate(locales):
        toml = "".join(
            f"{k} = {json.dumps(v)}\n" for k, v in {**settings, "locale": locale}.items()
        )
        (home / "config.toml").write_text(toml)  # JSON scalars are TOML scalars here
        if i == 0:
            subprocess.run([*casper, "index", "--home", str(home), "--json"], check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip
        ks = [a for k in KS for a in ("-k", str(k))]
        args = ["eval", "--home", str(home), "--dataset", str(DEFAULT_OUT), "--no-rerank", *ks]
        args += ["--out", str(home / "runs" / locale), "--json"]
        done = subprocess.run([*casper, *args], check=True, capture_output=True, text=True)
        for r in json.loads(done.stdout)["runs"]:
            recall = " | ".join(f"{100 * r['metrics'][f'message_recall@{k}']:.1f}" for k in KS)
            rows.append(f"| {locale} | {r['label']} | {recall} |")
    return rows


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:  # python -m eval.gold_style --run HOME
        print("\n".join(run(Path(sys.argv[2]))))
    else:  # python -m eval.gold_style [OUT]
        target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
        print(f"{len(generate(target))} questions → {target}")
