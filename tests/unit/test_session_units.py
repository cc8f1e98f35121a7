"""eval.session_units: sessions cut where the chat goes quiet, and passages fused with them."""

from __future__ import annotations

from eval import session_units as su


def test_a_pause_longer_than_the_gap_starts_a_session() -> None:
    hour = 3600.0
    rows = [(0.0, "a"), (0.5 * hour, "b"), (5 * hour, "c"), (5.1 * hour, "d"), (9.2 * hour, "e")]
    assert su.split_by_gap(rows, 4 * hour, prefix="7:") == {
        "a": "7:0", "b": "7:0", "c": "7:1", "d": "7:1", "e": "7:2",
    }  # fmt: skip


def test_a_passage_in_a_matching_session_rises_by_the_weight() -> None:
    session = {"a": "s1", "b": "s1", "c": "s2", "d": "s2"}
    passages = [(1.0, ["a"]), (0.9, ["c"]), (0.5, ["d"])]
    whole = {"s1": 0.0, "s2": 1.0}  # the second session matches as a whole
    assert su.fuse(passages, session, whole, 0.0) == [["a"], ["c"], ["d"]]
    assert su.fuse(passages, session, whole, 0.5) == [["c"], ["a"], ["d"]]  # a, d tie: rank
    assert su.fuse(passages, session, whole, 0.8) == [["c"], ["d"], ["a"]]


def test_pooled_sums_a_sessions_best_passages() -> None:
    session = {g: "s1" for g in "abcd"} | {"x": "s2"}
    passages = [(0.9, ["a"]), (0.8, ["b"]), (0.7, ["c"]), (0.6, ["d"]), (1.0, ["x"])]
    scores = su.pooled(passages, session)
    assert round(scores["s1"], 6) == round(0.9 + 0.8 + 0.7, 6)  # the best POOL_TOP = 3
    assert scores["s2"] == 1.0


def test_a_session_hit_maps_back_to_all_its_messages() -> None:
    members = {"s1": ["a", "b"], "s2": ["c"]}
    assert su.as_chunks(["s2", "s1", "gone"], members) == [["c"], ["a", "b"]]
