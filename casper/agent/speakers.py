"""PURE: who a sentence of an answer says sent a message, and when ("Sam said …", "…," Sam
said, "According to Sam, …", "— Sam", "On 2023-11-03 at 18:42 Sam said …"), read as a reader
reads it: past markdown emphasis and invisible characters, look-alike letters as the Latin ones.

Imports: stdlib, casper.plaintext. Used by casper.agent.quotes (the citation check) and
casper.agent.verify (the names `people` keys, `fold`ed).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from casper.plaintext import INVISIBLE

NOBODY = "\x00nobody"  # a sender named that no one in the messages is

_VERB = (
    r"(?:said|says|wrote|writes|texted|texts|replied|replies|responded|responds|asked|asks|"
    r"answered|answers|told|tells|mentioned|mentions|suggested|suggests|offered|offers|promised|"
    r"promises|agreed|agrees|noted|notes|added|adds|explained|explains|confirmed|confirms|"
    r"claimed|claims|stated|states|joked|jokes|admitted|admits|insisted|insists|messaged|"
    r"exclaimed|exclaims|wrote back|put it)"
)
_NAME = r"(?P<name>[\w'’+.-]+(?: [\w'’+.-]+){0,2})"
_SAYS = re.compile(rf"{_NAME}\s+{_VERB}\b[^.!?\"“]*$", re.IGNORECASE)
_SAID_AFTER = re.compile(rf"[\s,;:—–-]*{_NAME}\s+{_VERB}\b", re.IGNORECASE)  # "…," Sam said
_SAYS_ANYWHERE = re.compile(rf"\b{_VERB}\b", re.IGNORECASE)
_SOURCE = re.compile(
    rf"(?:\b(?:according to|from)\s+|^[\s>]*[—–]\s*|^[\s>]*--\s*){_NAME}[\s,:]*$", re.IGNORECASE
)  # "According to Sam, …", "From Sam [#12]: …", "— Sam [#12]" under a quotation
_EMPHASIS = str.maketrans("", "", "*`")  # **Sam** said: the name, not its markdown
_INVISIBLE = re.compile(f"[{INVISIBLE}]")
# letters that look like Latin ones (Cyrillic, Greek): "Sаm" with a Cyrillic а is Sam to a reader
_LOOKALIKE = str.maketrans(
    "аеорсухіјѕһԁԛԝкмнтвАВЕКМНОРСТХІЈЅαοριкνκτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijshdqwkmhtbabekmhopctxijsaopikvktuxabezhikmnoptyx",
)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}\b")
_NOT_NAMES = frozenset(
    ("he", "she", "they", "it", "we", "who", "someone", "somebody", "everyone", "everybody",
     "anyone", "anybody", "nobody", "one", "this", "that", "both", "then", "and", "also", "all",
     "each", "either", "neither", "else", "the", "a", "an", "casper", "i", "you", "me"),
)  # fmt: skip
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_DAY = re.compile(
    r"\b(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<day>\d{1,2})\b",
    re.IGNORECASE,
)


def fold(name: str) -> str:
    """A name as `people` keys it: lower case, compatibility forms, no invisible characters,
    look-alike letters read as the Latin ones a reader sees."""
    name = unicodedata.normalize("NFKC", _INVISIBLE.sub("", name)).translate(_LOOKALIKE)
    return " ".join(name.lower().split())


def when_said(before: str) -> tuple[str | None, str | None] | None:
    """The day and time written before "NAME said" ("On 2023-11-03 at 18:42 Sam said …"): when
    the message was sent. A date after the verb is what was said (a plan's day), not judged."""
    said = _SAYS.search(before)
    return None if said is None else written_when(before[: said.start()])


def named(before: str, people: Mapping[str, frozenset[str]]) -> str | None:
    """The sender a sentence names as the one who said it ("Sam said", "You wrote"), if any
    name someone has."""
    before = _INVISIBLE.sub("", before.translate(_EMPHASIS))
    said = _SAYS.search(before)
    if said is not None:
        return _known(said["name"], people) or _nobody(said["name"])
    source = _SOURCE.search(before)  # "According to Sam, …", "From Sam [#12]: …"
    return fold(source["name"]) if source and fold(source["name"]) in people else None


def named_after(after: str, people: Mapping[str, frozenset[str]]) -> str | None:
    """The sender named just after a quotation ("…," Sam said), if any name someone has."""
    said = _SAID_AFTER.match(_INVISIBLE.sub("", after.translate(_EMPHASIS)))
    return None if said is None else _known(said["name"], people)


def _nobody(name: str) -> str | None:
    """NOBODY when the name said is a name ("Jordan said") that no one in the messages has:
    then no cited message is theirs. Pronouns and other words before a verb name no one."""
    last = _INVISIBLE.sub("", name).split()[-1]
    return NOBODY if last[:1].isupper() and last.lower() not in _NOT_NAMES else None


def _known(name: str, people: Mapping[str, frozenset[str]]) -> str | None:
    words = fold(name).split()
    for size in range(len(words), 0, -1):  # the longest name that ends just before the verb
        name = " ".join(words[-size:])
        if name in people:
            return name
    return None


def written_when(text: str) -> tuple[str | None, str | None] | None:
    """The day and time a sender part or a sentence writes (`2023-11-03`, `Nov 3`, `18:43`)."""
    day, clock = _DAY.search(text), _CLOCK.search(text)
    month_day = _MONTH_DAY.search(text)
    if day is None and month_day is not None:
        month = _MONTHS.index(month_day["month"][:3].lower()) + 1
        return f"-{month:02d}-{int(month_day['day']):02d}", clock.group() if clock else None
    if day is None and clock is None:
        return None
    return (day.group() if day else None), (clock.group() if clock else None)


def names_another(text: str) -> bool:
    """True when the text between two quotations has a verb of saying ("and Sam said")."""
    return bool(_SAYS_ANYWHERE.search(text))
