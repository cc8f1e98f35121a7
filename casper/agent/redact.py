"""PURE: the disclosure ceiling's words and masks. `mask` hides what identifies or reaches a
person outside the conversation — phone numbers, emails, URLs, long digit runs (codes, card and
account numbers) and street addresses — and keeps what a reader needs to follow and cite it:
`[#id]`s, dates and times, people's names.

Imports: stdlib, casper.vocab (the privacy modes, loosest first).
"""

from __future__ import annotations

import re

from casper.vocab import PRIVACY_MODES, Privacy

# street suffixes: these are streets however the words before them are written ("350 fifth
# ave"); the second kind are ordinary words too ("a 2 hour drive"), so only after Capitalised
# words ("12 Ocean Drive")
_STREET = "st|street|ave|avenue|rd|road|blvd|boulevard|ln|lane|pkwy|parkway|hwy|highway|ter|terrace"
_STREET_CAPITALISED = "dr|drive|ct|court|way|pl|place|cir|circle|sq|square|plaza|trl|trail"
_TLDS = "com|org|net|edu|gov|io|co|me|app|dev|ly|gl|be|us|uk|info"
# One scan, left to right; at each place the first alternative that matches wins, so what must
# stay (an id, a date, a time) is tried before the digit runs that would otherwise take it.
_PATTERN = re.compile(
    rf"""
    (?P<keep>
        \[\#\d+\]                                           # a citation id
      | \b\d{{4}}-\d{{2}}-\d{{2}}(?:[ T]\d{{2}}:\d{{2}}(?::\d{{2}})?)?\b  # an ISO date (and time)
      | \b\d{{1,2}}:\d{{2}}(?::\d{{2}})?\b                       # a time
    )
  | (?P<email>(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+)
  | (?P<link>
        (?i:https?|ftp)://\S+
      | \b(?i:www)\.[\w-]+(?:\.[\w-]+)+\S*
      | \b[\w-]+(?:\.[\w-]+)*\.(?i:{_TLDS})(?:/\S*)?(?![\w.-])
    )
  | (?P<address>
        \b\d{{1,6}}[a-zA-Z]?\s+
        (?:
            (?:[A-Za-z][\w'.-]*\s+){{1,4}}(?i:{_STREET})
          | (?:[A-Z][\w'.-]*\s+){{1,4}}(?i:{_STREET_CAPITALISED})
        )\b\.?
    )
  | (?P<number>                                            # 5 or more digits, maybe spaced
        (?<![\w#])\+?\(?\d(?:[\s.()-]{{0,2}}\d)+(?!\w)
    )
    """,
    re.VERBOSE,
)
_WORDS = {"email": "[email]", "link": "[link]", "address": "[address]"}


def _masked(match: re.Match[str]) -> str:
    kind = match.lastgroup or "keep"
    text = match.group()
    if kind == "keep":
        return text
    if kind == "number":
        digits = sum(c.isdigit() for c in text)
        if digits < 5:  # a count, an amount, a year: stays
            return text
        phone = text[0] in "+(" or digits in (7, 10, 11)
        return "[phone]" if phone else "[number]"
    if kind == "link":  # the sentence's own punctuation after it stays
        kept = text.rstrip(".,;:!?)'\"")
        return "[link]" + text[len(kept) :]
    return _WORDS[kind]


def mask(text: str) -> str:
    """`text` with phone numbers, emails, URLs, long digit runs and street addresses replaced
    by `[phone]`, `[email]`, `[link]`, `[number]` and `[address]`; ids, dates, times and names
    stay as they were."""
    return _PATTERN.sub(_masked, text)


def stricter(*modes: Privacy | None) -> Privacy:
    """The strictest of the modes given (None: not given); `full` when none is."""
    given = [PRIVACY_MODES.index(m) for m in modes if m is not None]
    return PRIVACY_MODES[max(given)] if given else PRIVACY_MODES[0]
