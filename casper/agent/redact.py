"""PURE: the disclosure ceiling's words and masks. `mask` hides, in what people wrote, what
identifies or reaches a person outside the conversation — phone numbers, emails, links, card
numbers, IBANs, other long digit runs (codes, account numbers) and street addresses — and keeps
what a reader needs to follow it: dates, times, short numbers, people's names.

People write numbers every way but tidily, so detection reads a copy of the text normalised
first: invisible characters (zero-width spaces, word joiners, soft hyphens, the keycap marks of
4️⃣, combining marks put on a digit) dropped, every space of any width read as a space,
fullwidth forms as their ASCII letters (`ｅｖｉｌ．ｃｏｍ`, `＠`) and the ideographic full stop as
a dot (browsers read `evil。com` as `evil.com`), every dash, slash, underscore or middle dot
between two digits (a tilde or a plus sign too) — and the ` ⏎ ` a quoted line break
becomes, and the commas or `x` of a phone's 3-3-4 shape (`415,555,0199`) — read as a dash,
digits of any script or form read as 0-9 (Arabic-Indic, fullwidth, mathematical,
superscript, circled), an `O` or an `l` between digits as the digit it stands for. Each
character stands for one, so what is found there is masked in the text as written. The
detectors, most specific first, each on what the ones before it left:

1. dates (`2024-10-29`, with a time), times (`18:30`) and amounts (`$1,234.56`, `1234.50`)
   stay as written (a real month, day, hour and minute: `4155-55-01 99:99` is no date);
2. emails; links: a scheme or `www.`, or a host whose last labels are a public suffix (the
   Public Suffix List's snapshot that `publicsuffixlist` ships; nothing is fetched);
3. IBANs (ISO 13616: the ISO 7064 mod-97 check) and card numbers (13 to 19 digits passing
   Luhn's check);
4. phone numbers (`phonenumbers.PhoneNumberMatcher`, any that could be one, in the owner's
   region and in international form);
5. street addresses: a house number, maybe a direction, up to four words or a numbered street
   (`5th`, `23rd`), a street word (`350 5th Ave`, `55 W 23rd St`);
6. any other run of 5 or more digits, however spaced on one line (`acct #123456789`,
   `123 – 45 – 6789`): `[phone]` when it has a phone's length, else `[number]`.

Only message-derived text goes through `mask`: a tool's own ids, dates and counts are never in
what it is given (`Ceiling.field` masks each quoted field before it is framed).

Imports: stdlib, casper.plaintext, casper.vocab, casper.agent.quoting; phonenumbers and
publicsuffixlist inside functions (their tables load once, on the first text that could hold a
phone number or a link).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from casper.agent.quoting import quote
from casper.plaintext import INVISIBLE, plain
from casper.vocab import PRIVACY_MODES, Privacy

# what shows nothing in a number: invisible characters, the keycap mark (4️⃣ is a 4) and the
# combining marks a digit can carry (4́ is a 4)
_DROPPED = re.compile(
    f"[{INVISIBLE}\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
)
# one character read as another: every width of space as a space, the ideographic and
# halfwidth full stops as a dot (IDNA reads them so), the small commercial at as @
_SAME = str.maketrans(
    {**dict.fromkeys("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                     "\u2009\u200a\u202f\u205f\u3000", " "),
     **dict.fromkeys("\u3002\uff61\ufe52", "."), "\ufe6b": "@"}
)  # fmt: skip
# fullwidth letters, dash, dot, slash and at (0xFEE0 above ASCII's); not `＃`, which quoting
# put in place of a `#` (casper.agent.quoting): a body's `[＃123]` is no marker of Casper's
_FULLWIDTH = re.compile("[\uff0d-\uff0f\uff20-\uff3a\uff41-\uff5a]")
_DASH = "\u2010-\u2015\u2212\ufe58\ufe63\uff0d"  # hyphens, en and em dashes, minus, fullwidth
_JOINERS = re.compile(rf"(?<=\d)[{_DASH}/_~+\u00b7\u2022\u2027\u30fb\uff0f](?=[ \t]?\d)")
# spaced, and the ` ⏎ ` a line break became when the text was quoted (casper.agent.quoting)
_SPACED_JOINERS = re.compile(rf"(?<=\d) [{_DASH}/_\u00b7\u2022\u30fb\uff0f\u23ce-] (?=\d)")
# digits that are not Unicode's decimal digits (Nd) but have a digit's value: superscripts,
# subscripts, circled, parenthesised and dotted forms (a test holds this to unicodedata)
OTHER_DIGITS = (
    "\u00b2-\u00b3\u00b9\u1369-\u1371\u19da\u2070\u2074-\u2079\u2080-\u2089\u2460-\u2468"
    "\u2474-\u247c\u2488-\u2490\u24ea\u24f5-\u24fd\u24ff\u2776-\u277e\u2780-\u2788\u278a-\u2792"
    "\U00010a40-\U00010a43\U00010e60-\U00010e68\U00011052-\U0001105a\U0001f100-\U0001f10a"
)
# a phone's own shape, 3-3-4 digits, joined by commas or an x: no amount has a last group of
# four after its commas (415,555,019 is one; 415,555,0199 is none) and no size three parts of
# that shape (1920x1080 has two), so only there are they read as dashes
_PHONE_SHAPED = re.compile(r"(?<![\d,xX])(\d{3})([,xX])(\d{3})\2(\d{4})(?![\d,xX])")
_FOREIGN_DIGIT = re.compile(rf"(?![0-9])\d|[{OTHER_DIGITS}]")
# a digit, an @ or a dot of any form: else nothing to find
_MAYBE = re.compile(rf"\d|[@.{OTHER_DIGITS}\u3002\uff61\ufe52\uff0e\ufe6b\uff20]")
_LOOKALIKE = re.compile(r"(?<=\d)[OolI](?=-?\d)|(?<=\d-)[OolI](?=\d)")  # 4l5-555-O199
_DIGIT_OF = {"O": "0", "o": "0", "l": "1", "I": "1"}

_CLOCK = r"(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?"  # a real hour and minute
_KEEP = re.compile(
    r"\[#\d+\]|\bp_[0-9a-f]{8}\b"  # a citation marker, a person's id (Casper's own)
    r"|(?<!\d)\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"  # an ISO date (and time)
    rf"(?:[ T](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?)?(?!\d)"
    r"|(?<![\d-])(?:19|20)\d{2}-(?:0[1-9]|1[0-2])(?![\d-])"  # a month (2024-02)
    rf"|(?<![\d:]){_CLOCK}(?![\d:])"  # a time
    # an amount: thousands grouped by commas, or cents after at most six digits
    r"|(?<![\d.,-])\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?(?![\d.,-])"
    r"|(?<![\d.,-])\d{1,6}\.\d{2}(?![\d.,-])"
)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"(?i:\b(?:https?|ftp)://|\bwww\.)\S+")
_HOST = re.compile(r"(?<![\w@.-])(?:[\w-]+\.)+[^\W\d_][\w-]*(?:[/?#][^\s]*)?")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_CARD = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")
_DIRECTION = r"(?:[NSEW]|NE|NW|SE|SW|North|South|East|West)\.?"
_STREET = "st|street|ave|avenue|rd|road|blvd|boulevard|ln|lane|pkwy|parkway|hwy|highway|ter|terrace"
_STREET_CAPITALISED = "dr|drive|ct|court|way|pl|place|cir|circle|sq|square|plaza|trl|trail"
_ADDRESS = re.compile(
    rf"""(?<![\w-])\d{{1,6}}[a-zA-Z]?[ \t]+(?:{_DIRECTION}[ \t]+)?
        (?:
            (?:(?:\d{{1,3}}(?:st|nd|rd|th)|[A-Za-z][\w'.-]*)[ \t]+){{1,4}}(?i:{_STREET})
          | (?:(?:\d{{1,3}}(?:st|nd|rd|th)|[A-Z][\w'.-]*)[ \t]+){{1,4}}(?i:{_STREET_CAPITALISED})
        )\b\.?""",
    re.VERBOSE,
)
_SEP = r"(?:[ \t]?-[ \t]?|[ \t.()]{1,2})"  # dashes (what _JOINERS made of the rest), spaces
_RUN = re.compile(rf"\+?\(?(?<!\d)\d(?:{_SEP}?\d)+(?!\d)")
_PHONE_WINDOW = re.compile(r"\+?\(?\d(?:[ \t.()-]{0,3}\d){6,}")
_BLANK = "\x00"  # what a found span becomes in the working copy: no detector reads it
_LABEL = {"email": "[email]", "link": "[link]", "iban": "[number]", "card": "[number]",
          "phone": "[phone]", "address": "[address]", "number": "[number]"}  # fmt: skip

Span = tuple[int, int, str]  # start, end (in the normalised copy), what it is


def mask(text: str, region: str = "US") -> str:
    """`text` with phone numbers, emails, links, card numbers, IBANs, long digit runs and
    street addresses replaced by `[phone]`, `[email]`, `[link]`, `[card]`, `[iban]`,
    `[number]` and `[address]`; dates, times, short numbers and names stay as they were.
    `region`: the owner's country (ISO 3166 alpha-2), for numbers written without one."""
    if _MAYBE.search(text) is None:
        return text
    norm, where = _normalised(text)
    spans = _found(norm, region)
    if not spans:
        return text
    out, at = [], 0
    for start, end, kind in sorted(spans):
        # to the next character read: what the copy dropped after it (a mark on its last
        # digit) goes with it
        first, last = where[start], where[end] if end < len(where) else len(text)
        out += [text[at:first], _LABEL[kind]]
        at = last
    out.append(text[at:])
    return "".join(out)


def stricter(*modes: Privacy | None) -> Privacy:
    """The strictest of the modes given (None: not given); `full` when none is."""
    given = [PRIVACY_MODES.index(m) for m in modes if m is not None]
    return PRIVACY_MODES[max(given)] if given else PRIVACY_MODES[0]


# ---- the normalised copy --------------------------------------------------------------------
def _normalised(text: str) -> tuple[str, list[int]]:
    """(the copy detection reads, for each of its characters the index it came from). Every
    step maps one character to one, so the map still holds after it."""
    if _DROPPED.search(text):
        kept = [(i, c) for i, c in enumerate(text) if not _DROPPED.match(c)]
        where, norm = [i for i, _ in kept], "".join(c for _, c in kept)
    else:
        where, norm = list(range(len(text))), text
    if not norm.isascii():
        norm = _FULLWIDTH.sub(lambda m: chr(ord(m.group()) - 0xFEE0), norm.translate(_SAME))
        norm = _FOREIGN_DIGIT.sub(lambda m: str(unicodedata.digit(m.group())), norm)
    norm = _PHONE_SHAPED.sub(r"\1-\3-\4", norm)
    norm = _SPACED_JOINERS.sub(lambda m: " - ", norm)
    norm = _JOINERS.sub("-", norm)
    return _LOOKALIKE.sub(lambda m: _DIGIT_OF[m.group()], norm), where


# ---- the detectors, in order --------------------------------------------------------------
def _found(norm: str, region: str) -> list[Span]:
    spans: list[Span] = []
    work = norm
    for detect in (_keep, _emails, _links, _ibans, _cards, _phones, _addresses, _runs):
        found = list(detect(work, region))
        if found:
            work = _blanked(work, found)
            spans += [s for s in found if s[2] != "keep"]
    return spans


def _blanked(work: str, spans: list[Span]) -> str:
    """`work` with `spans` blanked out (the same length): the next detectors skip them."""
    parts, at = [], 0
    for start, end, _ in sorted(spans):
        parts += [work[at:start], _BLANK * (end - start)]
        at = end
    parts.append(work[at:])
    return "".join(parts)


def _keep(work: str, _region: str) -> Iterator[Span]:
    return ((m.start(), m.end(), "keep") for m in _KEEP.finditer(work))


def _emails(work: str, _region: str) -> Iterator[Span]:
    return ((m.start(), m.end(), "email") for m in _EMAIL.finditer(work))


def _links(work: str, _region: str) -> Iterator[Span]:
    taken: list[tuple[int, int]] = []
    for m in _URL.finditer(work):
        end = m.start() + len(m.group().rstrip(".,;:!?)'\"\x00"))
        taken.append((m.start(), end))
        yield m.start(), end, "link"
    for m in _HOST.finditer(work):
        if any(s < m.end() and m.start() < e for s, e in taken):
            continue
        host = re.split(r"[/?#]", m.group(), maxsplit=1)[0]
        if _is_domain(host):
            yield m.start(), m.start() + len(m.group().rstrip(".,;:!?)'\"\x00")), "link"


# endings no sentence starts with: `Evil.Com` is a link, `home.Now` a lost space
_NO_WORDS = frozenset({"com", "org", "net", "edu", "gov"})


def _is_domain(host: str) -> bool:
    """A registrable name under a public suffix: `evil.de`, `clan.gg`, `x.co.uk`, `Evil.Com`;
    not `e.g`, `file.txt`, nor a sentence that lost its space (`home.Now`)."""
    last = host.rsplit(".", 1)[-1]
    if last[:1].isupper() and last[1:].islower() and last.lower() not in _NO_WORDS:
        return False
    return _public_suffixes().privatesuffix(host.lower()) is not None


@cache
def _public_suffixes() -> Any:
    from publicsuffixlist import PublicSuffixList

    # the snapshot the package ships; accept_unknown=False: an unlisted ending is no domain;
    # only_icann: the list's private section names hosts people visit (`sa.com`,
    # `blogspot.com` are suffixes there, so a bare `sa.com` would be no domain)
    return PublicSuffixList(accept_unknown=False, accept_encoded_idn=False, only_icann=True)


def _ibans(work: str, _region: str) -> Iterator[Span]:
    for m in _IBAN.finditer(work):
        if _mod97(m.group()):
            yield m.start(), m.end(), "iban"


def _mod97(candidate: str) -> bool:
    """ISO 7064 MOD 97-10 as ISO 13616 applies it: the country and check digits moved to the
    end, letters as 10-35, the whole number ≡ 1 (mod 97)."""
    code = candidate.replace(" ", "").replace("-", "")
    if not 15 <= len(code) <= 34:
        return False
    digits = "".join(str(int(c, 36)) for c in code[4:] + code[:4])
    return int(digits) % 97 == 1


def _cards(work: str, _region: str) -> Iterator[Span]:
    for m in _CARD.finditer(work):
        digits = [int(c) for c in m.group() if c.isdigit()]
        if _luhn(digits):
            yield m.start(), m.end(), "card"


def _luhn(digits: list[int]) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        total += d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2)
    return total % 10 == 0


def _phones(work: str, region: str) -> Iterator[Span]:
    # the matcher parses every digit group it meets: it is given only the stretches that
    # hold 7 digits or more (what no phone number has fewer of), each on its own
    for window in _PHONE_WINDOW.finditer(work):
        for m in _matcher()(window.group(), region):
            yield window.start() + m.start, window.start() + m.end, "phone"


@cache
def _matcher() -> Callable[[str, str], Any]:
    import phonenumbers

    possible = phonenumbers.Leniency.POSSIBLE  # by length: invented and new numbers too
    return lambda text, region: phonenumbers.PhoneNumberMatcher(text, region, leniency=possible)


def _addresses(work: str, _region: str) -> Iterator[Span]:
    return ((m.start(), m.end(), "address") for m in _ADDRESS.finditer(work))


def _runs(work: str, _region: str) -> Iterator[Span]:
    for m in _RUN.finditer(work):
        digits = sum(c.isdigit() for c in m.group())
        if digits < 5:  # a count, an amount, a year: stays
            continue
        phone = m.group()[0] in "+(" or digits in (7, 10, 11)
        yield m.start(), m.end(), "phone" if phone else "number"


@dataclass(frozen=True, slots=True)
class Ceiling:
    """What a reader other than the owner's own terminal is shown (an MCP client, a model on
    another machine): the mode, and the owner's region for numbers written without a country.

    `shown` is the gate every string bound for such a reader passes — a tool's text is built
    from `field`s, and notes, notices, citations, prompt hints and errors pass `shown` whole."""

    mode: Privacy = "full"
    region: str = "US"

    def shown(self, text: str) -> str:
        """`text` as this reader may see it: no control characters or escape sequences, and
        under `redacted` or `aggregate` masked (`mask`)."""
        text = plain(text)
        return text if self.mode == "full" else mask(text, self.region)

    def field(self, text: str) -> str:
        """What people wrote (a body, a sender's or a group's name) inside a tool's line:
        quoted (casper.agent.quoting.quote), then `shown`."""
        return self.shown(quote(text))


FULL = Ceiling()  # the owner's own reader: nothing masked, people's words still quoted


def region_of(locale: str) -> str:
    """The country of a locale (`en_GB` → `GB`, `de-AT` → `AT`); `US` when it names none."""
    parts = locale.replace("-", "_").split(".")[0].split("_")
    return parts[1].upper() if len(parts) > 1 and len(parts[1]) == 2 else "US"
