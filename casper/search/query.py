"""PURE query understanding: what a search question says beyond its words.

A question like "When did Fahim visit the natural history museum on 17.01.2024?" carries three
things BM25 should not match literally: a date (no message contains "17.01.2024"), a person
(people rarely write their own name in their own messages) and question scaffolding ("when
did"), whose words are common in chat and drown the content words. `understand` turns them
into a date scope, a people scope and a shorter lexical query; every rewrite is recorded so
`search --json` can show it and `--literal` can switch it off.

A reading adds, it never replaces: the words as typed (names and date words kept, scaffolding
apart to be down-weighted) and the terms of the dates the question names (`casper.dates.
mentions`: "in 2017" finds the message that says "in '17") are searched beside the rewrite,
so a misread name or date costs rank, not the message. A date outside the indexed history
(an event's year, not the texts') is no scope.

Imports: stdlib, casper.dates (phrases, rules, mentions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import NotRequired, TypedDict
from zoneinfo import ZoneInfo

from casper.dates.mentions import question_terms, range_terms
from casper.dates.phrases import find_dates
from casper.dates.rules import ISO_RANGE
from casper.search.common_words import common
from casper.search.words import ASKING_VERBS, FILLER, INDEX_STOPWORDS

# Countries that write the month first in numeric dates (3/4/2024 = March 4th).
MONTH_FIRST_COUNTRIES = frozenset({"US", "PH", "FM", "MH", "PW", "GU", "AS", "PR", "VI", "UM"})

# Words that frame a question rather than say what it is about: question words, auxiliaries
# and pronouns. Measured on LoCoMo (README): a longer list ("many", "kind", "say", "about")
# lost recall, because those words also carry content in chat.
_SCAFFOLDING_WORDS = """
    what what's whats when where which who whom whose why how how's
    did do does is are was were be been being am has have had can could would should will
    i i'm me my mine myself we our us you your yours he him his she her hers they them their
"""
SCAFFOLDING = frozenset(_SCAFFOLDING_WORDS.split())

_NUMERIC_DATE = re.compile(
    r"\b(?:on\s+|from\s+|since\s+)?(\d{1,4})([./-])(\d{1,2})(?:\2(\d{2,4}))?\b", re.I
)
_WORD = re.compile(r"[\w'’]+", re.UNICODE)
# A superset of what the enrichment rules read as time: they (and dateparser's slow search)
# only run when a question has one of these, which keeps understanding under a millisecond.
_DATEISH = re.compile(
    r"\d|\b(?:ago|yesterday|today|tonight|last|this|past|since|week|weekend|month|year|"
    r"morning|afternoon|evening|night|spring|summer|fall|autumn|winter|christmas|xmas|eve|"
    r"thanksgiving|halloween|easter|valentine|new year|independence|memorial|labou?r|"
    r"mother|father|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|"
    r"sat|sun)",
    re.I,
)


@dataclass(frozen=True, slots=True)
class PersonMention:
    """A contact named in the question: any name on their card (full, first, last, nickname,
    organization)."""

    person_id: str
    name: str  # display name
    said: str  # the words as written


# the `understood` block of `search --json` (Understood.to_json); "from" is a keyword, hence
# the functional form
ReadDates = TypedDict(
    "ReadDates",
    {"phrase": str | None, "from": str, "to": str, "order": str | None, "use": str},
)


class PersonRead(TypedDict):
    id: str
    name: str
    said: str


class AmbiguousName(TypedDict):
    said: str
    people: int


class UnderstoodJson(TypedDict):
    literal: bool
    lexical_query: str
    semantic_query: NotRequired[str]
    typed_query: NotRequired[str]
    typed_weak: NotRequired[list[str]]
    dates: NotRequired[ReadDates]
    date_terms: NotRequired[list[str]]
    people: NotRequired[list[PersonRead]]
    people_use: NotRequired[str]
    ambiguous: NotRequired[list[AmbiguousName]]
    me: NotRequired[list[str]]
    dropped: NotRequired[list[str]]


@dataclass(frozen=True, slots=True)
class Understood:
    """The question as read: the queries for each leg and the scopes it implies."""

    text: str  # as asked
    lexical: str  # what BM25 sees
    semantic: str  # what the embedder sees
    date_range: tuple[date, date] | None = None  # inclusive local days
    date_phrase: str | None = None
    date_order: str | None = None  # day-first | month-first | unambiguous (numeric dates)
    people: tuple[PersonMention, ...] = ()
    me: tuple[str, ...] = ()  # the owner's own names found in the question
    dropped: tuple[str, ...] = ()  # scaffolding words left out of the lexical query
    literal: bool = False
    date_unmatched: bool = False  # nothing with the named person on the dates: person alone led
    typed: str = ""  # the words as typed, names and date words kept, scaffolding out ("" = none)
    weak: tuple[str, ...] = ()  # the scaffolding, searched beside `typed` at a low weight
    date_terms: tuple[str, ...] = ()  # what the named dates are indexed as (casper.dates.mentions)
    date_outside: bool = False  # the dates lie outside the indexed history: no scope
    # names that match more than one person (two contacts, or the owner and a contact), with
    # how many: they narrow nothing
    ambiguous: tuple[tuple[str, int], ...] = ()

    @property
    def person_id(self) -> str | None:
        """The one person the question is about (None when zero or several)."""
        ids = {p.person_id for p in self.people}
        return next(iter(ids)) if len(ids) == 1 else None

    @property
    def rewritten(self) -> bool:
        return self.lexical != self.text or self.semantic != self.text or self.scoped

    @property
    def scoped(self) -> bool:
        return self.scope_dates is not None or self.person_id is not None

    @property
    def scope_dates(self) -> tuple[date, date] | None:
        """The dates that scope the search: the named ones, unless outside the history."""
        return None if self.date_outside else self.date_range

    def summary(self) -> str:
        """One line for people: what BM25 searched and what was boosted."""
        parts = [f"words {self.lexical!r}"]
        if self.date_range:
            start, end = self.date_range
            when = start.isoformat() if start == end else f"{start} to {end}"
            note = " (none then)" if self.date_unmatched else ""
            note = " (before or after the history)" if self.date_outside else note
            parts.append(f"{self.date_phrase!r} = {when}{note}")
        if self.person_id:
            parts.append(f"chats with {self.people[0].name}")
        shared = {said for said, _ in self.ambiguous}
        if self.me and [w for w in self.me if w not in shared]:
            parts.append(f"{', '.join(w for w in self.me if w not in shared)} = me")
        parts += [f"{said}: {n} people, not narrowed" for said, n in self.ambiguous]
        return " · ".join(parts)

    def to_json(self) -> UnderstoodJson:
        """The `understood` block of `search --json`."""
        doc: UnderstoodJson = {"literal": self.literal, "lexical_query": self.lexical}
        if self.semantic != self.text:
            doc["semantic_query"] = self.semantic
        if self.typed and (self.typed != self.lexical or self.weak):
            doc["typed_query"] = self.typed  # searched beside lexical_query
            if self.weak:
                doc["typed_weak"] = list(self.weak)
        if self.date_range:
            start, end = self.date_range
            doc["dates"] = {
                "phrase": self.date_phrase,
                "from": start.isoformat(),
                "to": end.isoformat(),
                "order": self.date_order,
                "use": self._date_use(),
            }
        if self.date_terms:
            doc["date_terms"] = list(self.date_terms)
        if self.people:
            doc["people"] = [
                {"id": p.person_id, "name": p.name, "said": p.said} for p in self.people
            ]
            doc["people_use"] = "boosted" if self.person_id else "ambiguous, not used"
        if self.ambiguous:
            doc["ambiguous"] = [{"said": said, "people": n} for said, n in self.ambiguous]
        if self.me:
            doc["me"] = list(self.me)
        if self.dropped:
            doc["dropped"] = list(self.dropped)
        return doc

    def _date_use(self) -> str:
        if self.date_outside:
            return "outside the indexed history, not a scope"
        return "nothing with them then, not used" if self.date_unmatched else "boosted"


class Reader:
    """What understanding needs to know: the contacts, the owner's names, locale, time zone.

    Built once per process; the contacts' name forms are indexed here, not per question.
    """

    def __init__(
        self,
        people: Sequence[tuple[str, str]] = (),
        me_names: Sequence[str] = (),
        locale: str = "en_US",
        tz: ZoneInfo | None = None,
        coverage: tuple[date, date] | None = None,
        aliases: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.coverage = coverage  # first and last indexed day: "in January" means one inside
        self.people = list(people)
        self.me_names = tuple(me_names)
        self.locale = locale
        self.tz = tz or ZoneInfo("UTC")
        self.names = NameIndex(self.people, self.me_names, aliases)

    def read(self, question: str, now: datetime, *, literal: bool = False) -> Understood:
        return understand(
            question,
            now=now,
            tz=self.tz,
            people=self.names,
            me_names=self.me_names,
            locale=self.locale,
            literal=literal,
            coverage=self.coverage,
        )


class NameIndex:
    """Contacts' name forms ("Paola Rossi", "Paola", "Rossi", the card's nickname "Pao" or
    organization) → person ids, for quick lookup.

    `aliases` maps a person id to the other names on their card (AddressBook first, last,
    nickname, organization, full): each is matched whole, as written on the card.
    """

    def __init__(
        self,
        people: Iterable[tuple[str, str]],
        me_names: Sequence[str] = (),
        aliases: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.display = dict(people)
        self.forms: dict[str, list[str]] = {}
        shown = _name_forms(self.display.items(), me_names)
        found = shown + _alias_forms(aliases, me_names)
        # the owner's own names that are a contact's too ("Kevin" the owner, "Kevin Park"): the
        # contacts they could mean, so reading them as "me" can say it is not sure
        self.shared: dict[str, list[str]] = {}
        for form, pid in _name_forms(self.display.items(), ()) + _alias_forms(aliases, ()):
            if form.lower() in {n.lower() for n in me_names} and pid not in self.shared.get(
                form.lower(), []
            ):
                self.shared.setdefault(form.lower(), []).append(pid)
        for form, pid in sorted(dict.fromkeys(found), key=lambda f: -len(f[0])):
            if pid not in self.forms.setdefault(form, []):
                self.forms[form].append(pid)
        self.longest = max((len(f.split()) for f in self.forms), default=0)
        # "mom" is Mom: a one-word form of a shown name (not a card's organization, which may
        # be any word) also matches in lower case, unless it is a common word
        self.lowercase = {f.lower(): f for f, _ in shown if " " not in f and not common(f)}

    def strip(self, text: str) -> tuple[str, list[tuple[str, str]]]:
        """Remove the capitalised name forms in `text` (longest first), and one-word names in
        lower case that are not common words; (text, [(form, id)])."""
        found: list[tuple[str, str]] = []
        words = list(re.finditer(r"[^\W\d_][\w'’-]*", text))
        spans: list[tuple[int, int]] = []
        i = 0
        while i < len(words):
            for n in range(min(self.longest, len(words) - i), 0, -1):
                run = words[i : i + n]
                last = re.sub(r"['’]s$", "", run[-1].group(0))
                form = " ".join([w.group(0) for w in run[:-1]] + [last])
                if not all(w.group(0)[:1].isupper() for w in run):
                    if n > 1 or last.lower() not in self.lowercase:
                        continue
                    form = self.lowercase[last.lower()]
                ids = self.forms.get(form)
                if ids:
                    found += [(form, pid) for pid in ids if (form, pid) not in found]
                    spans.append((run[0].start(), run[-1].end()))
                    i += n
                    break
            else:
                i += 1
        for start, end in reversed(spans):
            text = text[:start] + " " + text[end:]
        return text, found


def day_first(locale: str) -> bool:
    """en_GB, de_DE, fr → day first; en_US (and a few others) → month first."""
    country = re.split(r"[_\-.]", locale or "")
    code = country[1].upper() if len(country) > 1 else ""
    return code not in MONTH_FIRST_COUNTRIES if code else locale.lower() not in ("en", "")


def numeric_date(
    question: str, locale: str
) -> tuple[tuple[date, date], str, str, tuple[int, int]] | None:
    """ "17.01.2024", "3/4/2024", "2024-01-17" → (day range, phrase, order, span) or None.

    Dotted dates are day-first everywhere; slashes and dashes follow the locale unless one
    part is over 12. A date without a year is not resolved here (it needs `now`).
    """
    for m in _NUMERIC_DATE.finditer(question):
        a, sep, b, c = m.group(1), m.group(2), m.group(3), m.group(4)
        if c is None:
            continue
        order = "unambiguous"
        if len(a) == 4:  # ISO
            year, month, day = int(a), int(b), int(c)
        else:
            x, y, year = int(a), int(b), int(c)
            year = year + 2000 if year < 100 else year
            if x > 12 >= y:
                day, month = x, y
            elif y > 12 >= x:
                month, day = x, y
            elif sep == "." or day_first(locale):
                day, month, order = x, y, "day-first"
            else:
                month, day, order = x, y, "month-first"
            if x == y:
                order = "unambiguous"
        try:
            when = date(year, month, day)
        except ValueError:
            continue
        return (when, when), m.group(0).strip(), order, m.span()
    return None


def understand(
    question: str,
    *,
    now: datetime,
    tz: ZoneInfo,
    people: Iterable[tuple[str, str]] | NameIndex = (),
    me_names: Sequence[str] = (),
    locale: str = "en_US",
    literal: bool = False,
    coverage: tuple[date, date] | None = None,
) -> Understood:
    """Read a search question; `literal` returns it untouched (the `--literal` switch)."""
    if literal or not question.strip():
        return Understood(question, question, question, literal=literal)
    text = question
    date_range = phrase = order = None
    # two ISO days ("between 2023-01-01 and 2023-12-31", as a chat follow-up carries dates) are
    # a range the rules read, not their first day
    found = None if ISO_RANGE.search(text) else numeric_date(text, locale)
    if found:
        date_range, phrase, order, span = found
        text = text[: span[0]] + " " + text[span[1] :]
    elif _DATEISH.search(text):
        named = find_dates(text, now, tz, locale=locale, coverage=coverage)
        if named and named[1]:
            date_range, phrase = named
            text = _remove(text, phrase)
    text_for_vector = text
    index = people if isinstance(people, NameIndex) else NameIndex(people, me_names)
    # contacts first: "Jamie Park" is the contact even when the owner is a Jamie too
    text, said = index.strip(text)
    text, me = _strip_names(text, [(n, "") for n in me_names])
    if me:  # the owner's messages are labelled "me": ask the embedder in the first person
        text_for_vector = first_person(text_for_vector, [w for w, _ in me], [w for w, _ in said])
    semantic = _tidy(text_for_vector) if (date_range or me) else question
    mentions = tuple(PersonMention(pid, index.display.get(pid, w), w) for w, pid in said)
    ambiguous = _ambiguous(said, me, index)
    lexical, dropped = _drop_scaffolding(text)
    if not lexical:  # a question of nothing but scaffolding: search its words after all
        lexical, dropped = " ".join(_WORD.findall(text)) or question, ()
    verbs = asking_verbs(question)
    lexical, asking = _topic_first(lexical, verbs)
    dropped += asking
    typed, weak = _drop_scaffolding(question)
    typed = _topic_first(typed, verbs)[0]
    if said or me:  # the contacts it names are a scope already (led by what matches) and the
        # owner is "me": their names in the typed leg pulled every line that greets them above
        # the evidence (texting spread R@25 45.6 with them, 50.6 without; docs/retrieval.md)
        typed = _without_names(typed, [w for w, _ in [*said, *me]])
    local = (now.astimezone(tz) if now.tzinfo else now).date()
    years = tuple(range(coverage[0].year, coverage[1].year + 1)) if coverage else ()
    terms = question_terms(question, local, tz.key, years)
    if not terms and date_range:  # "17.01.2024", "last week": the range the rules read
        terms = range_terms(*date_range)
    outside = bool(date_range and coverage and not _overlaps(date_range, coverage))
    if coverage and not outside:
        terms = tuple(t for t in terms if t.startswith(("d", "md")) or not _covered(t, coverage))
    return Understood(
        question,
        lexical,
        semantic or question,
        date_range,
        phrase,
        order,
        mentions,
        tuple(w for w, _ in me),
        dropped,
        typed=typed or lexical,
        weak=weak if typed else (),
        date_terms=terms,
        date_outside=outside,
        ambiguous=ambiguous,
    )


def _ambiguous(
    said: Sequence[tuple[str, str]], me: Sequence[tuple[str, str]], index: NameIndex
) -> tuple[tuple[str, int], ...]:
    """(name as written, how many people it may be) for each name that may be more than one:
    a form on several contacts' cards, or the owner's own name on a contact's card too."""
    count: dict[str, set[str]] = {}
    for form, pid in said:
        count.setdefault(form, set()).add(pid)
    for form, _ in me:
        others = index.shared.get(form.lower(), [])
        if others:
            count.setdefault(form, set()).update(["me", *others])
    return tuple((form, len(ids)) for form, ids in count.items() if len(ids) > 1)


def _covered(term: str, coverage: tuple[date, date]) -> bool:
    """True when a month or year term ("m202305", "y2023") lies inside the indexed history: a
    question naming it means the texts' month, which its scope holds, and every day mentioned
    in it carries the term (LoCoMo open-domain R@5 25.8 -> 24.7 with them searched)."""
    year = int(term[1:5])
    month = int(term[5:7]) if term.startswith("m") else None
    first = date(year, month or 1, 1)
    last = date(year, 12, 31) if month is None else date(year + month // 12, month % 12 + 1, 1)
    return _overlaps((first, last), coverage)


def _overlaps(a: tuple[date, date], b: tuple[date, date]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


# Auxiliaries before the owner's name, in their first-person form ("did Kevin" → "did I").
_AUX = {
    "did": "did", "does": "do", "do": "do", "is": "am", "was": "was", "has": "have",
    "have": "have", "had": "had", "would": "would", "will": "will", "can": "can",
    "could": "could", "should": "should", "might": "might", "may": "may",
}  # fmt: skip


def first_person(text: str, names: Sequence[str], contacts: Sequence[str] = ()) -> str:
    """ "When did Kevin go…" → "When did I go…", "Kevin's" → "my", other mentions → "me";
    the `contacts` named in it stay as written ("Kevin Park" is not the owner Kevin)."""
    kept = [form for form in dict.fromkeys(contacts) if form in text]
    for i, form in enumerate(kept):
        text = text.replace(form, f"\x00{i}\x00")
    for owner in names:
        name = re.escape(owner)
        text = re.sub(rf"\b{name}['’]s\b", "my", text)
        text = re.sub(
            rf"\b({'|'.join(_AUX)})\s+{name}\b",
            lambda m: f"{_cased(_AUX[m[1].lower()], m[1])} I",
            text,
            flags=re.IGNORECASE,
        )
        text = re.sub(rf"^(\s*){name}\b", r"\1I", text)
        text = re.sub(rf"\b(and|or)\s+{name}\b", r"\1 I", text)
        text = re.sub(rf"\b{name}\b", "me", text)
    for i, form in enumerate(kept):
        text = text.replace(f"\x00{i}\x00", form)
    return text


def _cased(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def _name_forms(
    people: Iterable[tuple[str, str]], me_names: Sequence[str]
) -> list[tuple[str, str]]:
    """(name form, person id), longest first: "Paola Rossi", then "Paola", "Rossi"."""
    mine = {n.lower() for n in me_names}
    forms: dict[tuple[str, str], None] = {}
    for pid, name in people:
        words = [w for w in _WORD.findall(name) if len(w) >= 3 and w[:1].isupper()]
        for form in (name.strip(), *words):
            named = form and form.lower() not in mine | SCAFFOLDING
            if named and not any(ch.isdigit() for ch in form) and "@" not in form:
                forms[(form, pid)] = None
    return sorted(forms, key=lambda f: -len(f[0]))


def _alias_forms(
    aliases: Mapping[str, Sequence[str]] | None, me_names: Sequence[str]
) -> list[tuple[str, str]]:
    """(name form, person id) for the card's other names; two letters are enough for a
    nickname the owner chose ("Jo"), but not a lower-case word or the owner's own name."""
    mine = {n.lower() for n in me_names}
    out = []
    for pid, names in (aliases or {}).items():
        for name in names:
            form = " ".join(name.split())
            if len(form) < 2 or not form[:1].isupper() or "@" in form:
                continue
            if form.lower() in mine | SCAFFOLDING or any(ch.isdigit() for ch in form):
                continue
            out.append((form, pid))
    return out


def _strip_names(text: str, forms: Sequence[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """Remove each name form written with a capital (plus a possessive 's); (text, found).

    Longer forms go first, so "Paola Rossi" is one person even when two contacts are Paola;
    a form shared by several people (two Paolas) finds them all.
    """
    found: list[tuple[str, str]] = []
    by_form: dict[str, list[str]] = {}
    for form, tag in forms:
        if form:
            by_form.setdefault(form, []).append(tag)
    for form, tags in by_form.items():
        pattern = re.compile(rf"(?<![\w'’]){re.escape(form)}(?:['’]s)?(?![\w])")
        m = pattern.search(text)
        if m and m.group(0)[:1].isupper():
            found += [(form, tag) for tag in tags]
            text = pattern.sub(" ", text)
    return text, found


def _drop_scaffolding(text: str) -> tuple[str, tuple[str, ...]]:
    kept: list[str] = []
    dropped: list[str] = []
    for word in _WORD.findall(text):
        norm = word.lower().replace("’", "'")
        (dropped if norm in SCAFFOLDING else kept).append(word)
    return " ".join(kept), tuple(dict.fromkeys(w.lower() for w in dropped))


def asking_verbs(question: str) -> frozenset[str]:
    """The words of `question` that ask how it was said ("plan", "talk", "text" as verbs:
    "when did Sam and I plan …", "did Priya text me …"), lower case. After an article or a
    possessive they are what it is about ("our plans", "what plans", "the text"), and so is an
    intention ("plan to …", "planning to go"): the messages say it too."""
    words = [w.lower().replace("’", "'") for w in _WORD.findall(question)]
    return frozenset(
        w for i, w in enumerate(words)
        if w in ASKING_VERBS and (i == 0 or words[i - 1] not in _DETERMINERS)
        and not (w.startswith("plan") and words[i + 1 : i + 2] == ["to"])
    )  # fmt: skip


_DETERMINER_WORDS = (
    "a an the this that these those my our your his her their its any some no every each of for "
    "what which whose"
)
_DETERMINERS = frozenset(_DETERMINER_WORDS.split())


def _topic_first(words: str, verbs: frozenset[str]) -> tuple[str, tuple[str, ...]]:
    """`words` without the question's asking `verbs` and the conjunctions the index drops
    anyway ("and"), when a topic word remains: "and plan Thanksgiving" → "Thanksgiving". A
    question of nothing else keeps them. Measured on every eval set (docs/retrieval.md)."""
    kept: list[str] = []
    left: list[str] = []
    for word in words.split():
        norm = word.lower().replace("’", "'")
        (left if norm in verbs or norm in _JOINERS else kept).append(word)
    if not left or not any(_topical(w) for w in kept):  # "talk about": nothing else to search
        return words, ()
    return " ".join(kept), tuple(dict.fromkeys(w.lower() for w in left))


_JOINERS = frozenset({"and", "or", "but", "&"})


def _topical(word: str) -> bool:
    """A word that says what the question is about: not a stop word the index drops, nor
    filler ("about", "regarding"), nor a single letter."""
    norm = word.lower().replace("’", "'")
    return len(norm) > 1 and norm not in INDEX_STOPWORDS and norm not in FILLER


def _without_names(typed: str, names: Sequence[str]) -> str:
    """`typed` without the contact names as written, possessives too ("Sam's"); the owner's
    own name beside them stays ("Kevin Park told Kevin")."""
    for name in sorted(set(names), key=len, reverse=True):
        words = r"\s+".join(re.escape(w) for w in _WORD.findall(name))
        typed = re.sub(rf"(?i)\b{words}(?:['’]s)?(?!\w)", " ", typed, count=1) if words else typed
    return " ".join(typed.split())


def _remove(text: str, phrase: str) -> str:
    i = text.lower().find(phrase.lower())
    if i < 0:
        return text
    before = re.sub(r"\b(?:on|in|during|around|from|since|at|of)\s*$", "", text[:i], flags=re.I)
    return before + " " + text[i + len(phrase) :]


def _tidy(text: str) -> str:
    return re.sub(r"\s+([?.!,])", r"\1", " ".join(text.split())).strip(" ,")
