"""PURE: pseudo-relevance feedback — words from the best hits' text added to the BM25 query,
and that leg fused beside the others. The eval's `feedback` ablation (eval.variants); Casper's
search does not run it (docs/retrieval.md, "Feedback pass").

A question and the message that answers it often share few words ("When did I move?" vs "I got
a new place with a bigger backyard"); the best hits of a first pass usually sit in the right
conversation, so their distinctive words are added to the lexical query for a second pass
(RM3-style, Lavrenko & Croft 2001; measured in docs/retrieval.md).

Imports: stdlib, casper.search.fusion and common_words (pure).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from casper.search.common_words import STOPWORDS
from casper.search.fusion import VECTOR_WEIGHT, Bounds, Scored, adapt_weights, convex

FEEDBACK_DOCS = 3  # how many of the first pass's best hits lend words
FEEDBACK_TERMS = 4  # how many words they lend
# The feedback leg's share of the lexical side of the hybrid fusion: with it, at or above the
# best single leg on every LoCoMo/synthetic set, 8x4 included (a larger share or vector 0.35
# cost LoCoMo R@5 0.7). It lost the gold-style set under the old additive scope boost; with the
# scope first it wins there and on the synthetic set and ties LoCoMo, but costs ~32 ms p50 at
# 100k chunks under load (budget 30), so Casper's search does not run it.
FEEDBACK_SHARE = 0.3
# Fewer first-pass candidates than this leave no background to tell a distinctive word from a
# common one (and the best hits would be most of the pool): no expansion then.
MIN_POOL = 10
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


def with_feedback(
    vector: Scored,
    lexical: Sequence[Scored],
    feedback: Scored,
    *,
    vector_weight: float = VECTOR_WEIGHT,
    feedback_share: float = FEEDBACK_SHARE,
    lexical_bounds: Sequence[Bounds] | None = None,
    adaptive: bool = False,
) -> list[tuple[str, float]]:
    """`casper.search.fusion.hybrid` with a `feedback` leg (BM25 with the best hits' words
    added) taking `feedback_share` of the lexical side; the other lexical legs share the rest.
    `lexical_bounds`: one per lexical leg, then the feedback leg's."""
    n_lex = len(lexical) + 1
    wide = list(lexical_bounds) if lexical_bounds is not None else [None] * n_lex
    if len(wide) != n_lex:
        raise ValueError(f"{n_lex} lexical legs but {len(wide)} bounds")
    present = [(leg, b) for leg, b in zip(lexical, wide, strict=False) if leg]
    bounds: list[Bounds] = [None, *(b for _, b in present), wide[-1]]
    side = 1.0 - vector_weight
    words = side * (1.0 - feedback_share) / max(1, len(present))
    weights = [vector_weight] + [words] * len(present) + [side * feedback_share]
    every = [vector, *(leg for leg, _ in present), feedback]
    if adaptive:
        weights = adapt_weights(every, weights)
    return convex(every, weights, bounds)
