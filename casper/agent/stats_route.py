"""`ask --no-llm` for counting questions: "who do I text the most?", "how many messages…".

Imports: casper.agent.{enrich,prefetch,question_kind}, casper.store.stats_query, casper.store
(no backends).
Search hits cannot answer a count; the stats tools can, so such questions are routed to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from casper.agent.enrich import Enrichment
from casper.agent.prefetch import named_person, outside_history
from casper.agent.question_kind import RANKING as _RANKING
from casper.agent.question_kind import is_stats_question
from casper.store.db import Store
from casper.store.stats_query import chat_split, exchanged, top_people


def stats_answer(
    question: str, found: Enrichment, store: Store, tz: ZoneInfo, me_names: Sequence[str] = ()
) -> str | None:
    """The figures that answer a counting question, or None when it is not one; the owner's
    own names (`me_names`) are not the contact it counts."""
    if not is_stats_question(question):
        return None
    start = end = None
    span = "in all your messages"
    if found.date_range:
        first, last = found.date_range
        start = datetime.combine(first, datetime.min.time(), tz).timestamp()
        end = datetime.combine(last + timedelta(days=1), datetime.min.time(), tz).timestamp()
        span = f"between {first} and {last}"
        covered = outside_history(store, tz, found.date_range)
        if covered:  # "last year" on a history that ended before: no zeros, the history's span
            return f"No messages {span}. {covered}"
    names = store.names()
    person = named_person(question, store, me_names)
    if person is not None and not _RANKING.search(question):
        split = chat_split(store, person, start, end)
        said = (
            f"With {names.get(person, person)} {span}: you sent {split['sent_one_to_one']:,} "
            f"messages and received {split['received_one_to_one']:,} in your one-to-one chat"
        )
        if split["sent_in_groups"] or split["received_in_groups"]:
            said += (
                f"; in group chats you both are in, you sent {split['sent_in_groups']:,} and "
                f"they sent {split['received_in_groups']:,}"
            )
        return said + " (from the stats)."
    top = top_people(store, tz, start, end, 5)
    if not top:
        return f"No messages {span}."
    parts = exchanged(store, start, end)  # what each count is made of, said beside it
    ranked = "\n".join(
        f"  {i}. {names.get(p, p)}: {n:,} messages ({parts[p][0]:,} one-to-one, "
        f"{parts[p][1]:,} theirs in groups)"
        for i, (p, n) in enumerate(top, 1)
    )
    return (f"Who you exchanged the most messages with {span} (both sides of your one-to-one "
            f"chats, and what they wrote in groups):\n{ranked}")  # fmt: skip
