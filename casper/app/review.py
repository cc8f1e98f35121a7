"""`casper review [YEAR]`: a year of messages, compared with the year before — top people,
the busiest day, streaks, new people, the year's first and last messages, emoji, reply times,
and the owner's `stats` series for the pictures.

Every figure is one `stats` gives for the same days (the owner's `stats me --since/--until`,
a person's `stats NAME`, `top_people` behind "who do I text most"), so the review and `stats`
agree by construction. Message text and names reach the review through one `Privacy` (the
shown text of a message, the shown name of a person), so a privacy mode or an exclusion list
swaps it in one place; `--share` shows no text and people as initials.

Imports: store, stats, dates, agent.redact, app.stats_scope, app.stats_series, documents (types).
"""

from __future__ import annotations

import calendar
import copy
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING

from casper.agent.redact import mask
from casper.app.stats_scope import Scope, scope_rows, stats_document
from casper.app.stats_series import local_fields
from casper.dates.ranges import days_to_utc
from casper.dates.zones import iso
from casper.errors import CasperError
from casper.records import ME
from casper.stats import LocalClock, zone_id
from casper.store.stats_query import exchanged

if TYPE_CHECKING:
    from casper.app.documents import (
        BusiestDay,
        Compared,
        Moment,
        PersonCount,
        ReviewDoc,
        StatsDoc,
        YearFigures,
    )
    from casper.records import StoredMessage
    from casper.store.db import Store

TOP_PEOPLE = 5


@dataclass(frozen=True, slots=True)
class Privacy:
    """What of a message and a person the review may show: the one place to swap."""

    text: Callable[[str], str | None]  # a message's text → what is shown (None: nothing)
    name: Callable[[str, str], str]  # (person id, display name) → what is shown


def full_privacy() -> Privacy:
    return Privacy(text=lambda text: text, name=lambda _pid, name: name)


def share_privacy() -> Privacy:
    """No message text, people as their initials; a name without letters (a bare number) as
    "unnamed 1", "unnamed 2" — never "#1", which reads as a rank beside the top people's."""
    numbers: dict[str, str] = {}

    def initials(pid: str, name: str) -> str:
        if pid == ME:
            return "me"
        letters = [w[0].upper() for w in name.split() if w[:1].isalpha()]
        if letters:
            return ".".join(letters[:3]) + "."
        return numbers.setdefault(pid, f"unnamed {len(numbers) + 1}")

    return Privacy(text=lambda _text: None, name=initials)


def mode_privacy(mode: str) -> Privacy:
    """The review as the setting `privacy` shows messages to a reader other than the owner —
    a review is made to be shown: `redacted` masks phones, emails, links, long numbers and
    addresses in its quoted messages; `aggregate` quotes none. Names stay (`--share` hides
    them)."""
    if mode == "aggregate":
        return Privacy(text=lambda _text: None, name=lambda _pid, name: name)
    if mode == "redacted":
        return Privacy(text=mask, name=lambda _pid, name: name)
    return full_privacy()


def year_span(year: int) -> tuple[date, date]:
    return date(year, 1, 1), date(year, 12, 31)


def default_year(store: Store, tz: tzinfo, now: datetime | None = None) -> int:
    """The year of the newest message (a history copied from an old phone has its own last
    year), else this year."""
    newest = store.coverage()[1]
    if newest:
        return datetime.fromtimestamp(newest, tz).year
    return (now or datetime.now(tz)).year


def history_days(store: Store, tz: tzinfo) -> tuple[date, date] | None:
    """The first and last local day of the history (None: nothing indexed)."""
    first, last = store.coverage()
    if first is None or last is None:
        return None
    return datetime.fromtimestamp(first, tz).date(), datetime.fromtimestamp(last, tz).date()


def compared_days(year: int, history: tuple[date, date]) -> tuple[date, date] | None:
    """The days of `year` to compare with the same dates of the year before: the whole year
    when the history holds both, else the dates both years hold (a history that starts or
    ends inside one); None when the year before holds no day of it."""
    first, last = history
    if year - 1 < first.year:
        return None
    this = max(date(year, 1, 1), first), min(date(year, 12, 31), last)
    before = max(date(year - 1, 1, 1), first), date(year - 1, 12, 31)
    start = max(this[0], _same_date(before[0], year))
    end = min(this[1], _same_date(before[1], year))
    return (start, end) if start <= end else None


def _same_date(day: date, year: int) -> date:
    """`day`'s month and day in `year` (29 February as the 28th in a year without one)."""
    return date(year, day.month, min(day.day, calendar.monthrange(year, day.month)[1]))


def year_in_history(year: int, history: tuple[date, date] | None) -> tuple[date, date]:
    """The history's days, when `year` is among them; else the error that says which years
    are (a review of nothing is no review)."""
    if history is None:
        raise CasperError("no messages to review yet", hint="run `casper index` first")
    first, last = history
    if not first.year <= year <= last.year:
        years = f"{first.year}" if first.year == last.year else f"{first.year}–{last.year}"
        raise CasperError(
            f"no messages in {year}: your messages run from {first} to {last}",
            hint=f"review a year of {years}, e.g. `casper review {last.year}`",
        )
    return history


def year_figures(doc: StatsDoc, year: int, people: int) -> YearFigures:
    return {
        "year": year,
        "sent": doc["sent"],
        "received": doc["received"],
        "active_days": doc["active_days"],
        "people": people,
        "longest_streak": doc["series"]["streaks"]["longest"]["days"],
        "median_reply_s": doc["median_reply_s"],
        "top_emoji": doc["top_emoji"],
    }


def _people_counts(store: Store, tz: tzinfo, span: tuple[date, date]) -> list[tuple[str, int, int]]:
    """(person, one-to-one, in groups) of everyone in a range, most messages first: what
    "who do I text most" ranks (`stats NAME`'s sent + received)."""
    split = exchanged(store, *days_to_utc(*span, tz))
    ranked = sorted(split.items(), key=lambda kv: (-(kv[1][0] + kv[1][1]), kv[0]))
    return [(p, direct, groups) for p, (direct, groups) in ranked if p != ME]


def busiest_day(store: Store, tz: tzinfo, span: tuple[date, date]) -> BusiestDay:
    """The local days with the most messages (every day of a tie, earliest first; `day` is
    the first of them), and how many."""
    counted, _ = scope_rows(store, Scope("me"), tz, *days_to_utc(*span, tz))
    days = Counter(d for d, _h in local_fields(counted, LocalClock(tz)))
    if not days:
        return {"day": None, "days": [], "messages": 0}
    most = max(days.values())
    tied = [f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d}"
            for d, n in sorted(days.items()) if n == most]  # fmt: skip
    return {"day": tied[0], "days": tied, "messages": most}


def _moment(store: Store, m: StoredMessage | None, tz: tzinfo, privacy: Privacy) -> Moment | None:
    if m is None:
        return None
    names = store.names()
    chat = store.chat(m.chat_id)
    time = iso(m.ts, tz)
    return {
        "id": m.rowid,
        "time": time,
        "sender": privacy.name(m.sender, names.get(m.sender, m.sender)),
        "chat": privacy.name(f"chat:{m.chat_id}", chat.name if chat else str(m.chat_id)),
        "text": privacy.text(m.text),
        "ts": time,  # deprecated: `time`, kept one release
    }


def edge_of_year(store: Store, start: float | None, end: float | None, *, last: bool) -> int | None:
    """The rowid of the year's first or last dated message (not a system event)."""
    order = "DESC" if last else "ASC"
    row = store.conn.execute(
        "SELECT rowid FROM messages WHERE kind != 'system' AND ts > 0 AND ts >= ? AND ts < ? "
        f"ORDER BY ts {order}, rowid {order} LIMIT 1",
        (start, end),
    ).fetchone()
    return row[0] if row else None


def build_review(
    store: Store, tz: tzinfo, year: int, privacy: Privacy, *, shared: bool = False
) -> ReviewDoc:
    """The review of `year`: its figures as the history holds them, and beside them the same
    dates of the year before (the whole year, or the dates both hold when the history starts
    or ends inside one; nothing when the year before is not in it). A year outside the
    history is an error."""
    history = year_in_history(year, history_days(store, tz))
    span = year_span(year)
    me = Scope("me")
    this_doc = stats_document(store, me, tz, span, period="month")
    counts = _people_counts(store, tz, span)
    window = compared_days(year, history)
    before: YearFigures | None = None
    compared: Compared | None = None
    rank_before: dict[str, int] = {}
    if window is not None:
        before_span = _same_date(window[0], year - 1), _same_date(window[1], year - 1)
        before_counts = _people_counts(store, tz, before_span)
        rank_before = {pid: i + 1 for i, (pid, _a, _b) in enumerate(before_counts)}
        before = year_figures(stats_document(store, me, tz, before_span, period="month"),
                              year - 1, len(before_counts))  # fmt: skip
        whole = window == span
        this_window, people = this_doc, len(counts)
        if not whole:
            this_window = stats_document(store, me, tz, window, period="month")
            people = len(_people_counts(store, tz, window))
        compared = {
            "days": [window[0].strftime("%m-%d"), window[1].strftime("%m-%d")],
            "whole_year": whole,
            "this": year_figures(this_window, year, people),
        }
    names = store.names()
    top: list[PersonCount] = [
        {
            "id": pid if not shared else privacy.name(pid, names.get(pid, pid)),
            "name": privacy.name(pid, names.get(pid, pid)),
            "messages": direct + groups,
            "one_to_one": direct,
            "in_groups": groups,
            "rank_before": rank_before.get(pid),
        }  # fmt: skip
        for pid, direct, groups in counts[:TOP_PEOPLE]
    ]
    start, end = days_to_utc(*span, tz)
    assert start is not None and end is not None
    new_people: list[str] | None = None  # who is new is unknown when the history starts this year
    if history[0] < span[0]:
        new_people = sorted(
            privacy.name(person.id, person.name)
            for person in store.people()
            if start <= ((store.stats(person.id) or {}).get("first") or -1) < end
        )  # first message ever, precomputed for all time
    edges = [edge_of_year(store, start, end, last=last) for last in (False, True)]
    found = [store.message(rowid) if rowid is not None else None for rowid in edges]
    if shared:  # the series' names map and the person block name people too
        this_doc = _shared_stats(this_doc, privacy)
    return {
        "year": year,
        "zone": zone_id(tz),
        "shared": shared,
        "history": {"first": history[0].isoformat(), "last": history[1].isoformat()},
        "this": year_figures(this_doc, year, len(counts)),
        "compared": compared,
        "before": before,
        "top_people": top,
        "busiest_day": busiest_day(store, tz, span),
        "new_people": new_people,
        "first_message": _moment(store, found[0], tz, privacy),
        "last_message": _moment(store, found[1], tz, privacy),
        "stats": this_doc,
    }


def _shared_stats(doc: StatsDoc, privacy: Privacy) -> StatsDoc:
    """The owner's stats as a shared review shows them: every person (their id included, which
    could be traced to a handle) as the privacy names them."""
    shown = copy.deepcopy(doc)
    alias = {pid: privacy.name(pid, name) for pid, name in doc["names"].items()}
    series = shown["series"]
    series["starters"]["by_sender"] = [
        [alias.get(str(who), "?"), n] for who, n in series["starters"]["by_sender"]
    ]
    for gap in series["gaps"]["longest"]:
        gap["back"] = alias.get(gap["back"], "?")
    shown["names"] = {name: name for name in alias.values()}
    shown["scope"] = {**doc["scope"], "name": "me"}
    return shown
