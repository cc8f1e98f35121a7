"""ingest.synthetic.texting: a seeded texting corpus whose gold questions its ledger backs.

What the eval relies on: the same seed writes the same corpus and questions; every gold guid is
a real message of the right chat; each question's answer is in its evidence messages (and its
"when" answer is their texting day); dates in event_date questions are the event's, not the
texts'; questions paraphrase rather than copy; and the chats look like texting.
"""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
from collections import Counter
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from eval.gold import load_gold
from ingest.synthetic.texting import TIMEZONE, TextingCorpus, build_texting_corpus
from ingest.synthetic.texting_cast import OWNER_FIRST
from ingest.synthetic.texting_pools import VALUES
from ingest.synthetic.texting_questions import KINDS, TAGS, pools

TZ = ZoneInfo(TIMEZONE)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> TextingCorpus:
    return build_texting_corpus(tmp_path_factory.mktemp("texting"), scale=0.3)


def _rows(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _by_guid(corpus: TextingCorpus) -> dict:
    return {r.guid: r for r in corpus.ledger.recs.values()}


def _local_day(ts: float) -> date:
    return datetime.fromtimestamp(ts, TZ).date()


def test_same_seed_same_corpus_and_questions(tmp_path: Path) -> None:
    a = build_texting_corpus(tmp_path / "a", scale=0.05)
    b = build_texting_corpus(tmp_path / "b", scale=0.05)
    c = build_texting_corpus(tmp_path / "c", scale=0.05, seed=20)
    for name in ("gold.jsonl", "gold-verbatim.jsonl", "evidence.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    sql = "SELECT guid, text, attributedBody, date, handle_id, is_from_me FROM message ORDER BY 1"
    assert _rows(a.chat_db, sql) == _rows(b.chat_db, sql)
    assert a.gold.read_text() != c.gold.read_text()  # the seed is what changes it


def test_every_gold_guid_is_a_visible_message_of_the_persons_chat(corpus: TextingCorpus) -> None:
    in_db = {g for (g,) in _rows(corpus.chat_db, "SELECT guid FROM message")}
    recs = _by_guid(corpus)
    evidence = json.loads(corpus.evidence.read_text())["episodes"]
    chat_of = {g: ep["person"] for ep in evidence for g in ep["evidence"]}
    for path in (corpus.gold, corpus.gold_verbatim):
        for item in load_gold(path):
            assert item.relevant, item.id
            for guid in item.relevant:
                assert guid in in_db, item.id
                rec = recs[guid]
                assert rec.kind == "message" and rec.text, item.id
                assert rec.chat == chat_of[guid], item.id  # the 1:1 chat of the episode


def test_categories_cover_every_kind_and_tag_in_both_styles(corpus: TextingCorpus) -> None:
    first, verbatim = load_gold(corpus.gold), load_gold(corpus.gold_verbatim)
    assert len(first) >= 120
    assert [(i.id, i.relevant, i.category) for i in first] == [
        (i.id, i.relevant, i.category) for i in verbatim
    ]
    pooled = pools(i.category for i in first)
    counts = {name: sum(i.category in members for i in first) for name, members in pooled.items()}
    assert set(counts) == set(KINDS) | set(TAGS)
    assert all(n >= 10 for n in counts.values()), counts
    assert sum(len(i.relevant) >= 3 for i in first if i.category.startswith("spread/")) >= 10


def test_styles_differ_only_in_how_the_owner_is_named(corpus: TextingCorpus) -> None:
    owner = re.compile(rf"\b{OWNER_FIRST}\b(?! Park)", re.I)
    pronoun = re.compile(r"\b(I|me|my)\b", re.I)
    differ = 0
    for a, b in zip(load_gold(corpus.gold), load_gold(corpus.gold_verbatim), strict=True):
        assert not owner.search(a.question), a.question
        assert not pronoun.search(b.question), b.question
        differ += a.question != b.question
        if a.question == b.question:
            assert not pronoun.search(a.question)
    assert differ >= 40  # the owner is in a good share of them


def test_answers_are_in_the_evidence_and_when_answers_are_its_day(
    corpus: TextingCorpus,
) -> None:
    recs = _by_guid(corpus)
    for item in load_gold(corpus.gold):
        texts = " ".join(recs[g].text.lower() for g in item.relevant)
        wanted = item.expected["answer_contains"]
        if item.category.startswith("when/"):
            day = _local_day(recs[item.relevant[0]].ts)
            assert wanted == [day.strftime("%B"), str(day.year)], item.id
        else:
            assert all(a.lower() in texts for a in wanted), (item.id, wanted)


def test_event_dates_in_questions_are_not_the_texting_dates(corpus: TextingCorpus) -> None:
    recs = _by_guid(corpus)
    ledger = json.loads(corpus.evidence.read_text())["episodes"]
    episodes = {tuple(ep["evidence"]): ep for ep in ledger}
    checked = 0
    for item in load_gold(corpus.gold):
        if "event_date" not in item.category:
            continue
        ep = episodes[item.relevant]
        texted = {_local_day(recs[g].ts) for g in item.relevant}
        if "year" in ep["fact"]:  # a past year, told later
            assert str(ep["fact"]["year"]) in item.question
            assert all(d.year > ep["fact"]["year"] for d in texted), item.id
        else:  # a plan, texted days or weeks before
            event = date.fromisoformat(ep["fact"]["event_date"])
            assert all(event > d for d in texted), item.id
            assert event.strftime("%B").lower() in item.question.lower(), item.question
        checked += 1
    assert checked >= 30


def test_questions_paraphrase_their_evidence(corpus: TextingCorpus) -> None:
    """No question copies four words in a row from the messages that answer it (a date both
    write the same way, "the 8th of july", does not count)."""
    recs = _by_guid(corpus)
    datey = re.compile(r"^(the|of|on|in|\d+(st|nd|rd|th)?|[a-z]+day|jan\w*|feb\w*|mar\w*|apr\w*"
                       r"|may|june?|july?|aug\w*|sept?\w*|oct\w*|nov\w*|dec\w*)$")  # fmt: skip

    def grams(text: str) -> set[tuple[str, ...]]:
        words = re.findall(r"[a-z0-9']+", text.lower())
        found = {tuple(words[i : i + 4]) for i in range(len(words) - 3)}
        return {g for g in found if not all(datey.match(w) for w in g)}

    for item in load_gold(corpus.gold):
        said = set().union(*(grams(recs[g].text) for g in item.relevant))
        assert not grams(item.question) & said, item.question


def test_it_reads_like_texting(corpus: TextingCorpus) -> None:
    texts = [r.text for r in corpus.ledger.recs.values() if r.kind == "message" and r.text]
    words = [len(t.split()) for t in texts]
    assert statistics.median(words) <= 5
    assert sum(w <= 8 for w in words) / len(words) > 0.9
    assert sum(t == t.lower() for t in texts) / len(texts) > 0.6
    joined = " ".join(texts).lower()
    for habit in (" u ", "tmrw", "lol", "😂", "!!", f"hey {OWNER_FIRST.lower()}", "hey sam"):
        assert habit in f" {joined} ", habit
    kinds = Counter(r.kind for r in corpus.ledger.recs.values())
    assert kinds["tapback"] > 50
    assert len({r.chat for r in corpus.ledger.recs.values()}) >= 9  # 1:1 chats and groups


def test_filler_never_names_an_episodes_values(corpus: TextingCorpus) -> None:
    """A place, band, pet or appointment an episode names appears in no other message of its
    chat, so the gold guids are all the messages that answer its question."""
    episodes = json.loads(corpus.evidence.read_text())["episodes"]
    recs = list(corpus.ledger.recs.values())
    for ep in episodes:
        own = set(ep["evidence"])
        chat = next(r.chat for r in recs if r.guid in own)
        others = " ".join(r.text.lower() for r in recs if r.chat == chat and r.guid not in own)
        for slot, value in ep["fact"].items():
            if slot in VALUES and slot not in ("wow", "cheer", "price"):
                assert not re.search(rf"\b{re.escape(value)}\b", others), (ep["id"], value)
