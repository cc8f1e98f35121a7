"""Words a contact's name may also be: a name typed in lower case is read as the contact only
when it is not one of these ("mom" is Mom; "will", "may" or "mark" stay words).

Imports: casper.search.feedback (its chat stop words).
"""

from __future__ import annotations

from casper.search.feedback import STOPWORDS

# first names (and nicknames) that are everyday English words too
_NAME_WORDS = frozenset(
    """will may mark bill rose pat sue grace hope joy art jack frank guy ray rich bob max jay
    dawn summer june april august faith amber ruby penny sandy rob don drew gene lee chase
    miles hunter page carol holly ivy iris lily daisy heather jade pearl crystal faye gale
    sky river rocky buck hank sonny cliff glen dale forest stone wade reed rusty dusty""".split()  # noqa: SIM905 - a word list reads better as text
)
COMMON = STOPWORDS | _NAME_WORDS


def common(word: str) -> bool:
    """True for a word that is too common to be read as a name when written in lower case."""
    return word.lower() in COMMON
