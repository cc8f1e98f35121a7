"""The windows' ranking and the messages' own, fused per message; hits as the windows around
the best messages (casper.search.by_message, pure)."""

from __future__ import annotations

from casper.search import by_message

ROWIDS = {
    "w1": (1, 2, 3), "w2": (2, 3, 4), "w3": (7, 8, 9),
    "m3": (3,), "m8": (8,), "m5": (5,), "m1": (1,),
}  # fmt: skip


def test_a_message_both_rankings_put_high_leads_its_windows_neighbours() -> None:
    windows = [("w1", 0.9), ("w3", 0.5)]  # read as messages 1, 2, 3, then 7, 8, 9
    alone = [("m3", 0.8), ("m8", 0.7), ("m5", 0.1)]
    order = [rowid for rowid, _ in by_message.fuse(windows, alone, ROWIDS)]
    # 3: third of the windows' messages and first alone; 8: fifth and second alone; then the
    # windows' first two, which nothing else voted for
    assert order[:4] == [3, 8, 1, 2]
    assert 5 in order  # found alone, in no window: still ranked


def test_scores_are_reciprocal_ranks_summed() -> None:
    fused = dict(by_message.fuse([("w1", 1.0)], [("m3", 1.0)], ROWIDS, k=10))
    assert fused[3] == 1 / 13 + 1 / 11 and fused[1] == 1 / 11
    equal = dict(by_message.fuse([("w1", 1.0)], [("m1", 1.0)], ROWIDS, weights=(1.0, 0.0)))
    assert equal[1] == 1 / 11


def test_hits_are_the_best_ranked_window_around_each_best_message() -> None:
    order = [(3, 0.3), (2, 0.2), (8, 0.1), (5, 0.05)]
    alone = {3: "m3", 8: "m8", 5: "m5"}
    hits = by_message.around(order, ["w2", "w1", "w3"], ROWIDS, alone, count=10)
    # 3: w2 ranks first of the windows holding it; 2 is shown by then; 8: w3; 5: no window
    assert hits == [("w2", 0.3), ("w3", 0.1), ("m5", 0.05)]
    assert by_message.around(order, ["w2", "w1", "w3"], ROWIDS, alone, count=2) == hits[:2]


def test_a_window_mostly_shown_already_gives_way_to_the_message_alone() -> None:
    order = [(3, 0.3), (1, 0.2)]
    hits = by_message.around(order, ["w2", "w1"], ROWIDS, {3: "m3", 1: "m1"}, count=5)
    # 1's window w1 shows 2 and 3 already (two thirds): 1 is shown alone
    assert hits == [("w2", 0.3), ("m1", 0.2)]
