"""Questions the stats answer: "who do I text the most?", "how many messages with Sam?",
"which month did I text Mom the most?" — answered from the stats, with or without a model.

Imports: casper.agent.{prefetch,question_kind,scope}, casper.dates.ranges, casper.records,
casper.store, casper.store.stats_query (no backends).
Search hits cannot answer a count; the stats can, so such questions are answered from them first
(casper.agent.answer: a model may add words around these figures, never other figures). The
question is read inside the request's filters (casper.agent.scope): its days, its person, its
chat.
"""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

from casper.agent.prefetch import outside_history
from casper.agent.question_kind import RANKING as _RANKING
from casper.agent.question_kind import VOLUME, is_stats_question
from casper.agent.scope import Scoped, span_words
from casper.dates.ranges import days_to_utc
from casper.records import ME
from casper.store.db import Store
from casper.store.stats_query import chat_split, exchanged, message_volume, top_people

FROM_STATS = "(from the stats)"
_PERIOD = re.compile(r"\b(day|week|month|year)s?\b|\b(dai|week|month|year)ly\b", re.I)
_MOST = re.compile(r"\b(?:most|busiest|least|fewest|quietest|top)\b", re.I)
LISTED_PERIODS = 24  # a longer series is cut, and says how many more


def stats_answer(question: str, scoped: Scoped, store: Store, tz: ZoneInfo) -> str | None:
    """The figures that answer a counting question inside its scope, or None when it is not
    one; the owner is never the contact it counts."""
    if not is_stats_question(question):
        return None
    start, end = days_to_utc(*scoped.days, tz) if scoped.days else (None, None)
    span = span_words(scoped.days)
    first, last = scoped.days or (None, None)
    if first is not None and last is not None:
        covered = outside_history(store, tz, (first, last))
        if covered:  # "last year" on a history that ended before: no zeros, the history's span
            return f"No messages {span}. {covered}"
    names = store.names()
    if scoped.chat_id is not None:
        return _in_chat(store, scoped, start, end, span, names)
    if VOLUME.search(question):
        return _by_period(question, store, tz, scoped.person, start, end, span, names)
    person = scoped.person
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
        return f"{said} {FROM_STATS}."
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


def _in_chat(
    store: Store,
    scoped: Scoped,
    start: float | None,
    end: float | None,
    span: str,
    names: dict[str, str],
) -> str:
    """`--chat`: the chat's messages in the range, and who sent them."""
    counts: dict[str, int] = {}
    for sender, chat_id, n in store.message_counts(start, end):
        if chat_id == scoped.chat_id:
            counts[sender] = counts.get(sender, 0) + n
    where = scoped.chat_name or f"chat {scoped.chat_id}"
    total = sum(counts.values())
    if not total:
        return f"No messages in {where} {span}."
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    who = ", ".join(f"{'you' if s == ME else names.get(s, s)} {n:,}" for s, n in ranked)
    return f"In {where} {span}: {total:,} messages ({who}) {FROM_STATS}."


def _by_period(
    question: str,
    store: Store,
    tz: ZoneInfo,
    person: str | None,
    start: float | None,
    end: float | None,
    span: str,
    names: dict[str, str],
) -> str:
    """Messages per day, week, month or year: the busiest first when the question asks for
    the most, else in order."""
    said = _PERIOD.search(question)
    word = (said.group(1) or said.group(2) or "month").lower() if said else "month"
    period = {"dai": "day"}.get(word, word)
    buckets = message_volume(store, tz, start, end, period=period, person_id=person, top_n=10**6)
    totals = [(key, sum(n for _, n in ranked)) for key, ranked in buckets.items()]
    with_whom = f" with {names.get(person, person)}" if person else ""
    if not totals:
        return f"No messages{with_whom} {span}."
    if _MOST.search(question):
        totals.sort(key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{key} ({n:,})" for key, n in totals[:3])
        return f"The busiest {period}s for messages{with_whom} {span}: {shown} {FROM_STATS}."
    shown = ", ".join(f"{key}: {n:,}" for key, n in totals[:LISTED_PERIODS])
    more = f", and {len(totals) - LISTED_PERIODS} more" if len(totals) > LISTED_PERIODS else ""
    return f"Messages{with_whom} per {period} {span}: {shown}{more} {FROM_STATS}."
