"""Draft the evidence episodes (which item, who tells it, its values) and word their dates.

A plan is texted weeks before its day in the ways people write it ("on the 10th", "feb 10th",
"next fri", "sat the 14th") and asked about by that day ("on the 10th of February"); a past
event is told years later ("back in 2017", "in '17") and asked about by its year. Both dates
are the event's, never the day of the texts.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from ingest.synthetic.texting_cast import EPISODES_PER_CONTACT, ME
from ingest.synthetic.texting_pools import ITEMS, VALUES, Item, Q

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SHORT_MONTHS = ("jan", "feb", "march", "april", "may", "june", "july", "aug", "sept", "oct",
                "nov", "dec")  # fmt: skip
SHORT_DAYS = ("mon", "tues", "weds", "thurs", "fri", "sat", "sun")
NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
                9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}  # fmt: skip
PAST_YEARS = (2014, 2015, 2016, 2017, 2018, 2019)
# How a plan's day is written in the text, and how far ahead of it (days) it is texted.
PLAN_STYLES: dict[str, tuple[int, int]] = {
    "nth": (5, 24),  # "on the 10th"
    "mon_nth": (14, 60),  # "feb 10th"
    "nth_of": (14, 60),  # "the 10th of feb"
    "next_day": (5, 13),  # "next fri", texted on a Friday to Sunday
    "day_nth": (5, 30),  # "sat the 14th"
}
_SLOT = re.compile(r"\{(\w+)\}")


@dataclass(slots=True)
class Draft:
    """One episode before it has a day: what is told, by whom, with which values."""

    id: str
    person: str  # the contact whose 1:1 chat it is in
    family: str
    item: Item
    teller: str  # ME or the contact key
    asks: tuple[Q, ...] = ()  # the questions asked about it (news: one of its two forms)
    values: dict[str, str] = field(default_factory=dict)
    n: int | None = None
    year: int | None = None
    plan_style: str | None = None
    offset: int = 0  # a plan: days from the texts to the event

    @property
    def other(self) -> str:
        return self.person if self.teller == ME else ME


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _slots(item: Item) -> list[str]:
    texts = [ln.text for ln in item.lines] + [q.text for q in item.asks]
    texts += [a for q in item.asks for a in q.answer]
    return list(dict.fromkeys(m[1] for t in texts for m in _SLOT.finditer(t) if m[1] in VALUES))


def draft_all(rng: random.Random) -> list[Draft]:
    """Every contact's episodes (EPISODES_PER_CONTACT); slot values are spread over the corpus."""
    used: dict[str, set[str]] = {}
    mine: set[str] = set()  # items the owner told: one owner, one dog, one house move
    drafts: list[Draft] = []
    for person, families in EPISODES_PER_CONTACT.items():
        for family, count in families.items():
            pool = [i for i in ITEMS[family] if not (person == "mum" and i.young)]
            for item in rng.sample(pool, min(count, len(pool))):
                drafts.append(_draft(rng, person, family, item, used, mine))
    return drafts


def _teller(rng: random.Random, person: str, item: Item, mine: set[str]) -> str:
    """The owner tells 30% of what either side may tell, each thing once; Jamie Park always
    tells his own (his questions must name him next to the owner's same first name)."""
    key = f"{item.key}:{item.lines[0].text}"
    r = rng.random()
    if person != "jamie_p" and item.tellers == "either" and r < 0.3 and key not in mine:
        mine.add(key)
        return ME
    return person


def _draft(
    rng: random.Random,
    person: str,
    family: str,
    item: Item,
    used: dict[str, set[str]],
    mine: set[str],
) -> Draft:
    teller = _teller(rng, person, item, mine)
    asks = item.asks if family != "news" else (rng.choice(item.asks),)
    draft = Draft(f"{person}-{family}-{item.key}", person, family, item, teller, asks)
    for slot in _slots(item):
        fresh = [v for v in VALUES[slot] if v not in used.setdefault(slot, set())]
        value = rng.choice(fresh or VALUES[slot])
        used[slot].add(value)
        draft.values[slot] = value
    if any(
        "{nth}" in t
        for t in [ln.text for ln in item.lines] + [a for q in item.asks for a in q.answer]
    ):
        draft.values["nth"] = ordinal(rng.randint(1, 28))  # a day the text names ("the 3rd")
    draft.n = rng.randint(*item.nums)
    if family == "past":
        draft.year = rng.choice(PAST_YEARS)
    if family == "plan":
        draft.plan_style = rng.choice(list(PLAN_STYLES))
        draft.offset = rng.randint(*PLAN_STYLES[draft.plan_style])
    return draft


def plan_days(style: str, texted: date, offset: int) -> date:
    """The event's day: `offset` days on, except "next <day>" which names a day of next week."""
    if style == "next_day":
        monday = texted + timedelta(days=7 - texted.weekday())
        return monday + timedelta(days=offset % 7)
    return texted + timedelta(days=offset)


def plan_phrase(style: str, event: date, rng: random.Random) -> str:
    """How the text says the plan's day."""
    nth = ordinal(event.day)
    if style == "nth":
        return f"on the {nth}"
    if style == "mon_nth":
        return rng.choice(
            (
                f"{SHORT_MONTHS[event.month - 1]} {nth}",
                f"{event.day} {SHORT_MONTHS[event.month - 1]}",
            )
        )
    if style == "nth_of":
        month = rng.choice((SHORT_MONTHS[event.month - 1], MONTHS[event.month - 1].lower()))
        return f"the {nth} of {month}"
    if style == "next_day":
        return (
            "next " + rng.choice((SHORT_DAYS, tuple(d.lower() for d in WEEKDAYS)))[event.weekday()]
        )
    return f"{SHORT_DAYS[event.weekday()]} the {nth}"


def question_date(event: date, texted: date, rng: random.Random) -> tuple[str, str]:
    """How a question names the event's day (never the texting day): (preposition, date)."""
    month, nth = MONTHS[event.month - 1], ordinal(event.day)
    forms = [
        ("on", f"the {nth} of {month}"),
        ("on", f"{month} {nth}"),
        ("on", f"{event.day} {month} {event.year}"),
        ("on", f"{WEEKDAYS[event.weekday()]} {event.day} {month}"),
    ]
    if (event.year, event.month) != (texted.year, texted.month):
        forms.append(("in", f"{month} {event.year}"))
    return rng.choice(forms)


def year_phrase(year: int, rng: random.Random) -> str:
    """A past year as texted: "in 2017", "back in 2017", "in '17" or "summer 2017"."""
    return rng.choices(
        (f"in {year}", f"back in {year}", f"in '{year % 100:02d}", f"summer {year}"), (5, 3, 2, 1)
    )[0]


def number(n: int, rng: random.Random, words: float) -> str:
    """3 or "three" (words with probability `words`, when there is a word for it)."""
    return NUMBER_WORDS[n] if n in NUMBER_WORDS and rng.random() < words else str(n)
