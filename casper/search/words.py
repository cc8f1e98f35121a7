"""PURE: the words of a search and which of them a text contains.

A hit's bar says how many of the searched words its messages contain (an absolute measure, not
its rank among the other hits), and a search says which words occur in no message at all: a
search for "alex birthday" when nobody ever wrote "birthday" must not look like a match.

Matching is close to what the word index does (LanceDB's default FTS: lower case, English
stemming): a word matches at the start of a word in the text, ignoring case, after a plain
English suffix ("plans" ~ "planning") is taken off both.

Imports: stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# The word index drops these (tantivy's English stop words, LanceDB's default): searching one
# finds nothing, which says nothing about the messages. Never reported as missing.
_INDEX_STOP = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
)
INDEX_STOPWORDS = frozenset(_INDEX_STOP.split())
# Words that carry no topic in a chat search; left out of the words a hit is measured by.
_FILLER_WORDS = (
    "did do does had has have how i me my our she he her him his them we were what when where "
    "which who why you your about than i'm i've it's say said says tell told mention "
    "mentioned regarding between "  # these two: how a chat follow-up carries a topic or dates
    # (casper.agent.followup); then how a question asks about a conversation ("when did Sam and
    # I plan Thanksgiving?"): the messages hold the event, rarely the verb
    "plan planned talk talked discuss discussed chat chatted text texted"
)
FILLER = frozenset(_FILLER_WORDS.split())
# How a question asks about a conversation rather than what it was about: "when did Sam and I
# plan Thanksgiving?", "what did we talk about…", "did Priya text me about the dentist?". Chat
# is full of them ("any plans this weekend?"), so beside a topic word they outrank it; the
# lexical query leaves them out when a topic word remains (casper.search.query).
_ASKING_VERBS = (
    "plan plans planned planning talk talks talked talking discuss discusses discussed "
    "discussing say says said tell tells told text texts texted texting chat chats chatted "
    "chatting message messaged messaging speak spoke"
)
ASKING_VERBS = frozenset(_ASKING_VERBS.split())
_SUFFIXES = ("ing", "ed", "es", "s")


def search_words(lexical_query: str) -> list[str]:
    """The words a hit is measured by: the lexical query's words (the reading has already
    taken names and question scaffolding out), without stop words and single letters, once each,
    in order."""
    out: list[str] = []
    for word in _WORD.findall(lexical_query.lower()):
        word = word.replace("’", "'")
        short = len(word) < 2 and word.isascii()
        if short or word in INDEX_STOPWORDS or word in FILLER or word in out:
            continue
        out.append(word)
    return out


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def contains(text: str, word: str) -> bool:
    """Does `text` contain `word` (at a word start, any case; a plain suffix aside)?
    A word of non-Latin script (CJK writes no spaces) matches anywhere."""
    low = text.lower()
    if not word.isascii():
        return word in low
    stem = _stem(word)
    return any(_stem(w).startswith(stem) or w.startswith(stem) for w in _WORD.findall(low))


def matched(words: Sequence[str], texts: Iterable[str]) -> list[str]:
    """The `words` that occur in any of `texts`, in the order of `words`."""
    joined = "\n".join(texts)
    return [w for w in words if contains(joined, w)]


def absent(words: Sequence[str], texts: Iterable[str], occurs: Callable[[str], bool]) -> list[str]:
    """The `words` in none of `texts` for which `occurs(word)` (a lookup in the whole index)
    is false too: those no message contains. Words the texts hold cost no lookup."""
    held = set(matched(words, texts))
    return [w for w in words if w not in held and not occurs(w)]


def absent_notice(absent: Sequence[str], words: Sequence[str]) -> str:
    """`no message contains 'birthday': …` — said wherever a search's hits are shown, so hits
    that match the rest of it (or only its meaning) are not taken for matches of that word."""
    quoted = [repr(w) for w in absent]
    said = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    if len(absent) == len(words):
        return f"no message contains {said}: the hits below are only close in meaning"
    return f"no message contains {said}: the hits below match the other words or the meaning"
