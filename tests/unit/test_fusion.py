"""Fusion: RRF tables (ties included), score ordering, overlap dedupe, top-k."""

from __future__ import annotations

import pytest

from casper.search.fusion import (
    convex,
    dedupe_overlapping,
    hybrid,
    minmax,
    order_by_scores,
    rrf,
    scope_first,
    top_k,
)


def r(rank: int, k: int = 60) -> float:
    return 1.0 / (k + rank)


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        ([], []),
        ([[]], []),
        ([["a", "b"]], [("a", r(1)), ("b", r(2))]),
        ([["a", "b"], ["b", "a"]], [("a", r(1) + r(2)), ("b", r(1) + r(2))]),
        ([["a", "b", "c"], ["c"]], [("c", r(3) + r(1)), ("a", r(1)), ("b", r(2))]),
        ([["x"], ["y"]], [("x", r(1)), ("y", r(1))]),
        ([["b", "a"], ["a"]], [("a", r(2) + r(1)), ("b", r(1))]),
        ([["a", "a", "b"]], [("a", r(1)), ("b", r(3))]),
    ],
)
def test_rrf_table(lists: list[list[str]], expected: list[tuple[str, float]]) -> None:
    got = rrf(lists)
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected])


def test_rrf_ties_break_by_best_rank_then_id() -> None:
    # z (ranks 1, 3) and q (3, 1) tie exactly and share best rank 1, so the id decides;
    # m (2, 2) sums slightly lower.
    assert [i for i, _ in rrf([["z", "m", "q"], ["q", "m", "z"]])] == ["q", "z", "m"]
    assert [i for i, _ in rrf([["b"], ["a"]])] == ["a", "b"]
    # equal sums with different best ranks: the better single rank wins before the id
    got = rrf([["zz", "aa"], ["x", "aa"]], k=0)  # all sum to 1.0; aa's best rank is 2
    assert got == [("x", 1.0), ("zz", 1.0), ("aa", 1.0)]


def test_rrf_k_changes_weights() -> None:
    assert rrf([["a"]], k=0) == [("a", 1.0)]
    assert rrf([["a"]], k=1) == [("a", 0.5)]


def test_order_by_scores_is_stable_descending() -> None:
    assert order_by_scores(["a", "b", "c", "d"], [0.1, 0.9, 0.9, -1.0]) == [
        ("b", 0.9),
        ("c", 0.9),
        ("a", 0.1),
        ("d", -1.0),
    ]
    assert order_by_scores([], []) == []
    with pytest.raises(ValueError):
        order_by_scores(["a"], [])


def test_dedupe_drops_mostly_contained_chunks() -> None:
    rowids = {
        "w1": range(1, 9),  # 8x4 windows overlap by half: both kept
        "w2": range(5, 13),
        "w3": range(9, 17),  # 4 of 8 in w2: kept; then w4 is wholly inside w2 ∪ w3
        "w4": range(7, 15),
        "other": [100, 101],
    }
    assert dedupe_overlapping(["w1", "w2", "w3", "w4", "other"], rowids) == [
        "w1",
        "w2",
        "w3",
        "other",
    ]


def test_dedupe_passages_and_unknown_ids() -> None:
    rowids = {"p1": [1, 2, 3], "p2": [2, 3, 4], "p3": [5, 6, 7]}
    assert dedupe_overlapping(["p2", "p1", "p3", "ghost"], rowids) == ["p2", "p3", "ghost"]
    assert dedupe_overlapping(["p2", "p1"], rowids, max_overlap=0.7) == ["p2", "p1"]


def test_top_k_and_minmax() -> None:
    assert top_k([1, 2, 3], 2) == [1, 2]
    assert top_k([1, 2], 5) == [1, 2]
    assert top_k([1, 2], 0) == [] == top_k([1], -1)
    assert minmax([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert minmax([5.0, 5.0]) == [1.0, 1.0]
    assert minmax([]) == []


def test_convex_blends_normalised_scores_by_weight() -> None:
    vector = [("a", 0.9), ("b", 0.5), ("c", 0.1)]  # cosine
    lexical = [("c", 30.0), ("d", 20.0), ("b", 10.0)]  # BM25: another scale entirely
    got = dict(convex([vector, lexical], [0.5, 0.5]))
    # a: 1.0 * .5; b: .5*.5 + 0; c: 0 + 1*.5; d: .5 * .5 (missing from a leg = 0 there)
    assert got == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.5, "d": 0.25})
    assert [i for i, _ in convex([vector, lexical], [0.8, 0.2])][:1] == ["a"]
    assert [i for i, _ in convex([vector, lexical], [0.2, 0.8])][:1] == ["c"]


def test_convex_ties_break_by_best_rank_then_id_and_rejects_bad_weights() -> None:
    assert [i for i, _ in convex([[("y", 1.0)], [("x", 1.0)]], [0.5, 0.5])] == ["x", "y"]
    assert convex([[("a", 2.0), ("a", 1.0)]], [1.0]) == [("a", 1.0)]  # a repeat counts once
    with pytest.raises(ValueError):
        convex([[("a", 1.0)]], [0.5, 0.5])


def test_hybrid_shares_the_lexical_weight_between_words_and_ngrams() -> None:
    vector = [("v", 0.8), ("w", 0.2)]
    words = [("x", 5.0), ("v", 1.0)]
    grams = [("g", 3.0), ("x", 1.0)]
    got = dict(hybrid(vector, [words, grams], vector_weight=0.5))
    assert got["x"] == pytest.approx(0.25 + 0.0)  # top of words (.25), bottom of grams (0)
    assert got["g"] == pytest.approx(0.25)
    assert got["v"] == pytest.approx(0.5)
    assert hybrid(vector, [[], []]) == convex([vector], [1.0])  # no lexical hits: vector only


def test_what_the_question_names_leads_and_nothing_is_dropped() -> None:
    ranked = [("a", 0.9), ("b", 0.6), ("c", 0.3)]
    in_scope = [("c", 0.5), ("z", 0.4)]  # z: only the scoped search found it
    got = scope_first(ranked, in_scope)
    assert [i for i, _ in got] == ["c", "z", "a", "b"]
    assert [s for _, s in got] == pytest.approx([0.5 + 0.5, 0.4 + 0.5, 0.9, 0.6])  # descending
    assert scope_first(ranked, []) == ranked  # nothing in scope: the plain ranking
    assert scope_first([], in_scope) == in_scope
    assert scope_first([("a", 0.1)], [("b", 0.7)]) == [("b", 0.7), ("a", 0.1)]  # no lift needed


def test_bounds_keep_a_weak_match_inside_a_scope_weak() -> None:
    # inside a scope the only word match scores 2.0 where the whole index's best scores 8.0:
    # on its own range it would count as a perfect match (1.0) and outvote the vector leg
    vector = [("right", 0.7), ("weak", 0.3)]
    words = [("weak", 2.0)]
    alone = dict(hybrid(vector, [words], vector_weight=0.4))
    assert alone["weak"] > alone["right"]
    wide = dict(hybrid(vector, [words], vector_weight=0.4, lexical_bounds=[(1.0, 8.0)]))
    assert wide["right"] == pytest.approx(0.4)
    assert wide["weak"] == pytest.approx(0.6 * (2.0 - 1.0) / 7.0)
    assert wide["right"] > wide["weak"]
    assert minmax([2.0, 4.0], (0.0, 8.0)) == [0.25, 0.5]
    assert minmax([2.0, 4.0], None) == [0.0, 1.0]


def test_bounds_follow_their_legs_when_a_leg_is_empty() -> None:
    vector = [("v", 1.0), ("w", 0.0)]
    grams = [("g", 4.0)]
    # words found nothing: the n-gram leg keeps its own bound, not the words leg's
    got = dict(
        hybrid(vector, [[], grams], vector_weight=0.5, lexical_bounds=[(0.0, 100.0), (0.0, 8.0)])
    )
    assert got["g"] == pytest.approx(0.5 * 0.5)
    with pytest.raises(ValueError):
        hybrid(vector, [grams], lexical_bounds=[None, None])
    with pytest.raises(ValueError):
        convex([vector], [1.0], [None, None])


def test_a_scope_keeps_the_unscoped_best_in_the_first_places() -> None:
    from casper.search.fusion import keep_best, scope_first

    ranked = [(c, 1 - i / 20) for i, c in enumerate("abcdefghij")]
    scoped = [(c, 0.9 - i / 30) for i, c in enumerate("vwxyzstuqr")]
    led = scope_first(ranked, scoped, keep=2, within=10)
    ids = [i for i, _ in led]
    assert ids[:8] == list("vwxyzstu") and ids[8:10] == ["a", "b"]  # the scope leads, bounded
    scores = [s for _, s in led]
    assert scores == sorted(scores, reverse=True)  # places keep their scores
    assert [i for i, _ in scope_first(ranked, scoped)][:10] == list("vwxyzstuqr")  # unbounded
    # already inside: nothing moves
    assert keep_best(ranked, ["a", "c"], 10) == ranked
