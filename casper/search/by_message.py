"""PURE: the windows' ranking and the messages' own ranking fused per message, and the hits a
reader is shown: the windows around the best messages.

Windows of three messages dilute a single long message (its words are a third of the window's,
its meaning a third of the vector), so each message is also indexed and ranked alone; both
rankings then vote for messages by reciprocal rank (`fuse`), and the best messages are shown in
their best-ranked window (`around`), so a hit still reads as a conversation.

Imports: stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# Reciprocal-rank fusion of the two rankings: score = Σ weight / (RRF_K + rank). k = 10 and
# equal weights, measured on the REALTALK phones and every other eval set (docs/retrieval.md):
# k 5-40 and weights 1:1.5-2 moved R@10 by under a point either way.
RRF_K = 10
WINDOW_WEIGHT = 1.0
MESSAGE_WEIGHT = 1.0
# a window shown around a message must show mostly messages not shown yet (as the windows'
# own dedupe, casper.search.fusion.dedupe_overlapping); else the message is shown alone
MAX_OVERLAP = 0.5

Ranked = Sequence[tuple[str, float]]


def fuse(
    windows: Ranked,
    alone: Ranked,
    rowids: Mapping[str, Sequence[int]],
    *,
    k: int = RRF_K,
    weights: tuple[float, float] = (WINDOW_WEIGHT, MESSAGE_WEIGHT),
) -> list[tuple[int, float]]:
    """Messages (rowids) best first, with their fused scores.

    `windows` is the windows' ranking (best first), read as the ranking of their messages: each
    message takes the rank of its first appearance (a window's messages in time order), as
    message recall has always read the windows. `alone` ranks the messages alone. `rowids` maps
    every id of both to its messages. Ties keep the first-seen order.
    """
    scores: dict[int, float] = {}
    for ranking, weight in ((_messages(windows, rowids), weights[0]),
                            (_messages(alone, rowids), weights[1])):  # fmt: skip
        for rank, rowid in enumerate(ranking, start=1):
            scores[rowid] = scores.get(rowid, 0.0) + weight / (k + rank)
    order = list(scores)  # first seen: the windows' order, then the messages' own
    return sorted(((r, scores[r]) for r in order), key=lambda item: -item[1])


def _messages(ranked: Ranked, rowids: Mapping[str, Sequence[int]]) -> list[int]:
    seen: set[int] = set()
    out: list[int] = []
    for cid, _ in ranked:
        for rowid in rowids.get(cid, ()):
            if rowid not in seen:
                seen.add(rowid)
                out.append(rowid)
    return out


def around(
    messages: Sequence[tuple[int, float]],
    windows: Sequence[str],
    rowids: Mapping[str, Sequence[int]],
    alone: Mapping[int, str],
    count: int,
    *,
    max_overlap: float = MAX_OVERLAP,
) -> list[tuple[str, float]]:
    """Up to `count` hits (an index row id and the score of the message it was chosen for):
    the best message not shown yet, in the best-ranked window of `windows` that holds it and
    shows mostly new messages; else that message alone (its row in `alone`)."""
    best: dict[int, str] = {}
    for cid in windows:
        for rowid in rowids.get(cid, ()):
            best.setdefault(rowid, cid)
    shown: set[int] = set()
    hits: list[tuple[str, float]] = []
    for rowid, score in messages:
        if len(hits) >= count:
            break
        if rowid in shown:
            continue
        chosen = best.get(rowid)
        members = set(rowids.get(chosen, ())) if chosen is not None else set()
        if not members or len(members & shown) / len(members) > max_overlap:
            chosen, members = alone.get(rowid), {rowid}
        if chosen is None:  # neither a window nor its own row: nothing to show it by
            continue
        hits.append((chosen, score))
        shown |= members
    return hits
