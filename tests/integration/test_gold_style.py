"""The gold-style question file (eval/gold_style.jsonl) is what its generator makes from the
demo corpus's ledger, and every question points at messages that answer it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from casper.search.query import NameIndex, numeric_date
from eval import gold_style
from eval.gold import load_gold
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.cast import PEOPLE


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return build_demo_corpus(tmp_path_factory.mktemp("gold-style") / "src")


def test_the_committed_file_is_the_generators_output(tmp_path: Path) -> None:
    out = tmp_path / "gold_style.jsonl"
    gold_style.generate(out)
    assert out.read_text("utf-8") == gold_style.DEFAULT_OUT.read_text("utf-8"), (
        "regenerate: python -m eval.gold_style"
    )


def test_each_question_names_the_person_day_and_event_of_its_messages(corpus) -> None:  # noqa: ANN001
    items = load_gold(gold_style.DEFAULT_OUT)
    assert len(items) >= 150 and all(i.answerable for i in items)
    by_guid = {r.guid: r for r in corpus.ledger.recs.values()}
    cast = {p.key: p for p in PEOPLE}
    aliases = {
        k: [n for n in (p.card.first, p.card.last, p.card.nickname) if n]
        for k, p in cast.items()
        if p.card
    }
    index = NameIndex([(k, p.name) for k, p in cast.items()], (), aliases)
    shapes = set()
    for item in items:
        recs = [by_guid[g] for g in item.relevant]
        partner = {corpus.ledger.one_to_one.get(r.chat) for r in recs}
        _, said = index.strip(item.question)
        assert {pid for _, pid in said} == partner, item.question  # a 1:1 chat with them
        texts = " ".join(r.text.lower() for r in recs)
        assert all(a.lower() in texts for a in item.expected["answer_contains"]), item.id
        days = {datetime.fromtimestamp(r.ts, UTC).date() for r in recs}
        assert len(days) == 1, item.id  # one day's messages
        shape, _name_kind = (item.category or "").split("/")
        shapes.add(shape)
        found = numeric_date(item.question, "en_GB")  # the owner writes dates day-first
        if shape == "when":
            assert found is None
        else:
            assert found is not None and found[0] == (days.pop(),) * 2, item.question
            assert ("." in found[1]) == (shape == "dated-dot")
    assert shapes == {"dated-dot", "dated-slash", "when"}
