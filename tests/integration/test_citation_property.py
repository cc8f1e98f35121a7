"""A property of every answer a model writes: whatever it attributes to a message it was shown,
the reader sees only what that message says.

For random messages search retrieved (from the demo store) and a model that writes one line
per message giving it another message's words, sender or time — a neighbour in the same chat
as often as a message from elsewhere, as a transcript line led or ended by the tag or as a
quotation — no false attribution reaches the reader unmarked (tests/attributions.py judges the
answer against the store). And the same lines written faithfully keep their citations, unmarked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from casper.agent.answer import answer_question
from casper.agent.core import Limits
from casper.agent.quotes import MARKS
from casper.protocols import Hit, HitMessage
from casper.store.db import Store
from tests.attributions import (
    Shown,
    false_attributions,
    holds,
    same_sender,
    store_lookup,
    unmarked_lines_with,
)
from tests.fakes import SameAnswer

EXAMPLES = int(os.environ.get("CASPER_FUZZ_EXAMPLES", "150"))
TZ = ZoneInfo("America/Los_Angeles")
NOW = datetime(2024, 11, 1, 12, tzinfo=TZ)
QUESTION = "what did they say about it?"
# the store is module-scoped and only read: one per example would rebuild the demo each time
SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@dataclass(frozen=True, slots=True)
class Message:
    rowid: int
    guid: str
    chat: str
    ts: float
    shown: Shown


@pytest.fixture(scope="module")
def store(
    indexed_template: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    home = tmp_path_factory.mktemp("property") / "home"
    shutil.copytree(indexed_template[0], home)
    store = Store.open(home / "casper.sqlite", create=False)
    yield store
    store.close()


class Pool:
    """The messages a case draws from (a failing case prints this, not every message)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.by_rowid = {m.rowid: m for m in messages}

    def __repr__(self) -> str:
        return f"Pool({len(self.messages)} messages)"


@pytest.fixture(scope="module")
def pool(store: Store) -> Pool:
    """Text messages of two words or more on one line, with no quotation marks or tags."""
    look = store_lookup(store, TZ)
    chats = {c.id: c.name for c in store.chats()}
    rows = store.conn.execute(
        "SELECT rowid, guid, ts, chat_id, text FROM messages WHERE kind = 'text' ORDER BY rowid"
    ).fetchall()
    out = []
    for rowid, guid, ts, chat_id, text in rows:
        if not text or len(text.split()) < 2 or any(c in text for c in '"“”[]\n:'):
            continue
        shown = look(rowid)
        assert shown is not None
        out.append(Message(rowid, guid, chats.get(chat_id, "?"), ts, shown))
    return Pool(out)


def searching(found: Sequence[Message]) -> Callable[..., list[Hit]]:
    """Search that retrieves `found`, one hit each, whatever it is asked."""
    hits = [
        Hit(f"c{m.rowid}", m.chat, 1.0, m.ts, m.ts, (),
            (HitMessage(m.rowid, m.guid, m.ts, m.shown.sender, m.shown.text),))
        for m in found
    ]  # fmt: skip

    def search(query: str, **options: object) -> list[Hit]:
        return list(hits)

    return search


def line(form: str, rowid: int, when: str, sender: str, text: str) -> str:
    if form == "lead":
        return f"[#{rowid}] {when} {sender}: {text}"
    if form == "trail":
        return f"- {sender}: {text} [#{rowid}]"
    return f'{sender} said "{text}" [#{rowid}].'


def answered(store: Store, found: Sequence[Message], answer: str) -> str:
    asked = answer_question(
        QUESTION, store=store, search=searching(found), engine=SameAnswer(answer), tz=TZ,
        limits=Limits(max_iterations=2), now=NOW,
    )  # fmt: skip
    return asked.answer


def retrieved(pool: Pool) -> st.SearchStrategy[list[Message]]:
    """One to three messages search found."""
    return st.lists(st.sampled_from(pool.messages), min_size=1, max_size=3,
                    unique_by=lambda m: m.rowid)  # fmt: skip


@st.composite
def false_lines(
    draw: st.DrawFn, pool: Pool, store: Store
) -> tuple[list[Message], list[str], list[str]]:
    """(the retrieved messages, one false line per message, the words falsely attributed)."""
    found = draw(retrieved(pool))
    by_rowid = pool.by_rowid
    lines: list[str] = []
    words: list[str] = []
    for cited in found:
        near = [by_rowid[n.rowid] for n in store.context(store.message(cited.rowid), 3, 3)
                if n.rowid in by_rowid and n.rowid != cited.rowid]  # fmt: skip
        nearby = near and draw(st.booleans())
        other = draw(st.sampled_from(near if nearby else pool.messages))
        c, o = cited.shown, other.shown
        lie = draw(st.sampled_from(["words", "sender", "time"]))
        form = draw(st.sampled_from(["lead", "trail", "quote"] if lie != "time" else ["lead"]))
        if lie == "words" and not holds(o.text, c.text):
            lines.append(line(form, cited.rowid, c.when, c.sender, o.text))
            words.append(o.text)
        elif lie == "sender" and not same_sender(o.sender, c.sender):
            lines.append(line(form, cited.rowid, c.when, o.sender, c.text))
        elif lie == "time" and o.when[:10] != c.when[:10]:
            lines.append(line(form, cited.rowid, o.when, c.sender, c.text))
        else:  # the other message says the same, from the same sender, on the same day
            lines.append(line(form, cited.rowid, o.when, o.sender, f"{o.text} and then some more"))
            words.append(f"{o.text} and then some more")
    return found, lines, words


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_no_false_attribution_reaches_the_reader_unmarked(
    data: st.DataObject, store: Store, pool: Pool
) -> None:
    found, lines, words = data.draw(false_lines(pool, store))
    answer = answered(store, found, "\n".join(lines))
    look = store_lookup(store, TZ)
    assert false_attributions(answer, look, MARKS) == [], answer
    for said in words:
        assert unmarked_lines_with(answer, said, look, MARKS) == [], answer


@settings(max_examples=max(20, EXAMPLES // 3), deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_faithful_lines_keep_their_citations_unmarked(
    data: st.DataObject, store: Store, pool: Pool
) -> None:
    found = data.draw(retrieved(pool))
    forms = [data.draw(st.sampled_from(["lead", "trail", "quote"])) for _ in found]
    lines = [
        line(f, m.rowid, m.shown.when, m.shown.sender, m.shown.text)
        for f, m in zip(forms, found, strict=True)
    ]
    answer = answered(store, found, "\n".join(lines))
    assert not any(mark.strip() in answer for mark in MARKS)
    for m in found:
        assert f"[#{m.rowid}]" in answer
    assert false_attributions(answer, store_lookup(store, TZ), MARKS) == []


def test_the_pool_spans_the_history(pool: Pool) -> None:
    """The pool spans the demo's years: the property draws from all of them."""
    years = {datetime.fromtimestamp(m.ts, UTC).year for m in pool.messages}
    assert len(years) >= 2 and len(pool.messages) > 500
