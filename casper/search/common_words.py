"""Words a contact's name may also be: a name typed in lower case is read as the contact only
when it is not one of these ("mom" is Mom; "will", "may" or "mark" stay words).

Imports: stdlib only.
"""

from __future__ import annotations

# Chat filler that would pull in any chatty passage; the FTS index drops English stop words
# itself, so this list is only what is frequent in chats and carries no topic.
STOPWORDS = frozenset(
    """a an the and or but if of to in on at for with by from as is are was were be been being
    am i me my mine we us our you your yours he him his she her hers they them their it its this
    that these those there here what when where which who whom whose why how do does did done
    have has had having not no yes so too very just can could would should will shall may might
    must about into over after before again then than also all any some more most other such
    only own same up down out off once both each few nor now like really yeah oh get got go
    going gone went know think thanks thank wow hey hi lol haha great good awesome glad sounds
    sound time lot much many one okay ok sure cool nice let well still way make made see""".split()  # noqa: SIM905 - a word list reads better as text
)
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
