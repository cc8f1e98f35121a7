"""Pseudo-relevance feedback (the eval's `feedback` ablation): which words the best hits lend
to the lexical query, and the share their leg takes of the lexical side."""

from __future__ import annotations

import pytest

from eval.feedback import expansion, with_feedback, words

TOP = [
    "me: did you see the place?\nSam Rivera: yes! a bigger backyard for the dogs, moving friday",
    "Sam Rivera: the backyard is huge\nme: the dogs will love the backyard",
]
POOL = [
    *TOP,
    "Sam Rivera: dinner friday?\nme: sure, friday works",
    "me: the dogs need a walk\nSam Rivera: yes they do",
    *(f"Sam Rivera: work was long today ({n})" for n in range(6)),
]


def test_sender_labels_and_chat_filler_are_not_words() -> None:
    assert words("Sam Rivera: yeah the backyard is huge lol\nme: haha ok") == ["backyard", "huge"]


def test_words_frequent_in_the_top_hits_and_rare_in_the_pool_come_first() -> None:
    got = expansion("when did I move", TOP, POOL, n_terms=3)
    assert got[0] == "backyard"  # 3 times in the top hits, in no other candidate
    assert "dogs" not in got[:1] and "sam" not in got and "rivera" not in got


def test_words_already_asked_are_not_added() -> None:
    assert "backyard" not in expansion("how big is the backyard", TOP, POOL, n_terms=5)


def test_a_word_in_every_candidate_ranks_below_a_distinctive_one() -> None:
    same = ["me: pizza tonight", *(f"Sam: pizza again {n}" for n in range(10))]
    assert expansion("what food", same[:1], same, n_terms=1) == ["tonight"]


def test_no_hits_or_no_terms_wanted_give_nothing() -> None:
    assert expansion("anything", [], POOL) == []
    assert expansion("anything", TOP, POOL, n_terms=0) == []


def test_ties_are_broken_alphabetically_so_the_query_is_stable() -> None:
    top = ["me: zebra apple"]
    assert expansion("q", top, top + ["me: other words"] * 9, n_terms=2) == ["apple", "zebra"]


def test_a_small_pool_gives_no_background_and_no_expansion() -> None:
    assert expansion("when did I move", TOP, POOL[:9]) == []
    assert expansion("when did I move", TOP, POOL[:10]) != []


def test_the_feedback_leg_takes_its_share_of_the_lexical_side_only() -> None:
    vector = [("v", 0.8), ("w", 0.2)]
    words = [("x", 5.0), ("v", 1.0)]
    feedback = [("f", 9.0), ("x", 1.0)]
    got = dict(with_feedback(vector, [words], feedback, vector_weight=0.4, feedback_share=0.3))
    assert got["v"] == pytest.approx(0.4)  # the vector leg keeps its weight
    assert got["x"] == pytest.approx(0.6 * 0.7)  # words keep 70 % of the lexical side
    assert got["f"] == pytest.approx(0.6 * 0.3)  # found only through the best hits' words
    empty = dict(with_feedback(vector, [[]], feedback, vector_weight=0.4, feedback_share=0.3))
    assert empty["f"] == pytest.approx(0.18) and empty["v"] == pytest.approx(0.4)


def test_the_feedback_legs_bound_follows_it_when_a_leg_is_empty() -> None:
    vector = [("v", 1.0), ("w", 0.0)]
    grams = [("g", 4.0)]
    fb = dict(with_feedback(vector, [grams], [("f", 3.0)], vector_weight=0.5,
                            feedback_share=0.5, lexical_bounds=[None, (0.0, 6.0)]))  # fmt: skip
    assert fb["f"] == pytest.approx(0.5 * 0.5 * 0.5)
    with pytest.raises(ValueError):
        with_feedback(vector, [grams], [("f", 3.0)], lexical_bounds=[None])
