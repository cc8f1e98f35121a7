"""PURE: pseudo-relevance feedback — words from the best hits' text added to the BM25 query.

A question and the message that answers it often share few words ("When did I move?" vs "I got
a new place with a bigger backyard"); the best hits of a first pass usually sit in the right
conversation, so their distinctive words are added to the lexical query for a second pass
(RM3-style, Lavrenko & Croft 2001; measured in the README's "Retrieval quality").

Imports: stdlib only.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

FEEDBACK_DOCS = 3  # how many of the first pass's best hits lend words
FEEDBACK_TERMS = 4  # how many words they lend
# Fewer first-pass candidates than this leave no background to tell a distinctive word from a
# common one (and the best hits would be most of the pool): no expansion then.
MIN_POOL = 10
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
_WORD = re.compile(r"[^\W\d_][\w'’]*[^\W_]|[^\W\d_]{2}")


def words(text: str) -> list[str]:
    """Content words of a chunk's text, lower-cased; each line's 'Sender:' label is skipped."""
    out: list[str] = []
    for line in text.lower().split("\n"):
        _, sep, body = line.partition(": ")
        out += _WORD.findall(body if sep else line)
    return [w for w in (x.strip("'’") for x in out) if len(w) > 2 and w not in STOPWORDS]


def expansion(
    query: str,
    top: Sequence[str],
    pool: Sequence[str],
    n_terms: int = FEEDBACK_TERMS,
) -> list[str]:
    """Up to `n_terms` words frequent in `top` (the best hits' texts) and rare in `pool` (the
    whole first-pass candidate list, which stands in for the collection's document frequency),
    not already in the query; best first, ties alphabetical. Nothing when `pool` is small.
    """
    if len(pool) < MIN_POOL or n_terms <= 0:
        return []
    asked = set(words(query))
    tf: Counter[str] = Counter()
    for text in top:
        tf.update(w for w in words(text) if w not in asked)
    if not tf:
        return []
    df: Counter[str] = Counter()
    for text in pool:
        df.update(set(words(text)))
    n = len(pool)
    weight = {w: f * math.log((n + 1) / (df[w] + 0.5)) for w, f in tf.items()}
    best = sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, score in best[:n_terms] if score > 0]
