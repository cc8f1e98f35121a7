"""LoCoMo conversion: evidence normalisation (eval.md §1.4, §3.3), timestamps, captions, chat.db."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from casper.errors import CasperError
from eval import locomo
from tests.paths import SHARED, shared_fixture

REAL = SHARED / "fixtures" / "locomo" / "locomo10.json"


def _sample() -> dict[str, Any]:
    """A two-session conversation shaped like locomo10.json, with every quirk we handle."""
    s1 = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "Hey Bo! Went to the pottery class."},
        {
            "speaker": "Bo",
            "dia_id": "D1:2",
            "text": "Nice, look at mine",
            "img_url": ["https://example.invalid/x.jpg"],
            "blip_caption": "a photo of a blue bowl",
            "query": "blue bowl",
        },
        {"speaker": "Ana", "dia_id": "D1:3", "text": "Lovely glaze."},
    ]
    s2 = [
        {"speaker": "Bo", "dia_id": "D2:1", "text": "Ran a 5k yesterday."},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "Congrats!", "blip_caption": "a medal"},
        *({"speaker": "Bo", "dia_id": f"D2:{i}", "text": f"filler {i}"} for i in range(3, 8)),
    ]
    qa = [
        {"question": "q0", "answer": "pottery", "evidence": ["D1:1"], "category": 4},
        {"question": "q1", "answer": "x", "evidence": ["D1:2; D2:1"], "category": 1},
        {"question": "q2", "answer": 2022, "evidence": ["D2:1 D1:3 D1:1"], "category": 2},
        {"question": "q3", "answer": "a; b", "evidence": [], "category": 3},
        {"question": "q4", "adversarial_answer": "trap", "evidence": ["D2:05"], "category": 5},
        {
            "question": "q5",
            "answer": "y",
            "evidence": ["D", "D:1:2", "D9:9", "D1:3"],
            "category": 4,
        },
        {"question": "q0", "answer": "pottery", "evidence": ["D1:1"], "category": 4},
    ]
    return {
        "sample_id": "conv-t",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": s1,
            "session_2_date_time": "10:05 am on 25 May, 2023",
            "session_2": s2,
            "session_3_date_time": "9:00 am on 1 June, 2023",  # dangling, as in conv-26
        },
        "qa": qa,
    }


@pytest.mark.parametrize(
    ("raw", "ids", "dropped"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"], []),
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"], []),
        (["D30:05"], ["D30:5"], []),
        (["D"], [], ["D"]),
        (["D:11:26"], [], ["D:11:26"]),
        (["D10:19", "D8:6"], ["D8:6"], ["D10:19"]),
        (["D8:6", "D8:06"], ["D8:6"], []),
        ([], [], []),
    ],
)
def test_normalise_evidence(raw: list[str], ids: list[str], dropped: list[str]) -> None:
    known = {"D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D30:5"}
    assert locomo.normalise_evidence(raw, known) == (ids, dropped)


def test_questions_categories_and_guids() -> None:
    conv = locomo.convert(_sample())
    q = {item.meta["locomo_category"]: item for item in conv.questions[:5]}
    assert [i.category for i in conv.questions[:5]] == [
        "single-hop",
        "multi-hop",
        "temporal",
        "open-domain",
        "adversarial",
    ]
    assert q[1].relevant == ("locomo-conv-t-D1-2", "locomo-conv-t-D2-1")
    assert q[2].relevant == ("locomo-conv-t-D2-1", "locomo-conv-t-D1-3", "locomo-conv-t-D1-1")
    assert not q[3].answerable  # empty evidence: excluded from recall, not scored 1.0
    assert q[5].relevant == ("locomo-conv-t-D2-5",)  # zero padding stripped
    assert q[5].expected == {"abstain": True}
    assert q[2].expected == {"answer_contains": ["2022"]}
    assert q[3].expected == {"answer_contains": ["a"]}
    assert conv.questions[5].relevant == ("locomo-conv-t-D1-3",)
    assert conv.dropped_evidence == ("D", "D:1:2", "D9:9")
    info = locomo.summary([conv])
    assert info["duplicate_questions"] == 1
    assert info["without_evidence"] == 1
    assert info["turns"] == 10


def test_timestamps_are_session_start_plus_about_30s_and_deterministic() -> None:
    conv = locomo.convert(_sample())
    tz = ZoneInfo(locomo.LOCOMO_TZ)
    first = conv.turns[0].ts
    assert (first.year, first.month, first.day, first.hour, first.minute) == (2023, 5, 8, 13, 56)
    assert first.utcoffset() == tz.utcoffset(first.replace(tzinfo=None))
    s2 = [t for t in conv.turns if t.dia_id.startswith("D2:")]
    assert s2[0].ts.hour == 10 and s2[0].ts.minute == 5
    gaps = [(b.ts - a.ts).total_seconds() for a, b in zip(s2, s2[1:], strict=False)]
    assert all(20.0 <= g <= 40.0 for g in gaps)
    assert len(set(gaps)) > 1  # jittered
    assert all(t.ts.date() == s2[0].ts.date() for t in s2)
    assert conv.turns == locomo.convert(_sample()).turns
    assert conv.source_hash == locomo.convert(_sample()).source_hash
    assert s2[-1].ts - s2[0].ts < timedelta(minutes=5)


def test_captions_are_appended_and_images_flagged() -> None:
    conv = locomo.convert(_sample())
    by_id = {t.dia_id: t for t in conv.turns}
    assert by_id["D1:2"].text == "Nice, look at mine [photo: a photo of a blue bowl]"
    assert by_id["D1:2"].has_image
    assert by_id["D2:2"].text == "Congrats! [photo: a medal]"  # caption without img_url
    assert not by_id["D2:2"].has_image
    assert by_id["D1:1"].text == "Hey Bo! Went to the pottery class."


def test_write_corpus_is_a_real_chat_db_that_ingests(tmp_path: Path) -> None:
    from casper.indexer.pipeline import Indexer
    from casper.store.db import Store

    conv = locomo.convert(_sample())
    chat_db, contacts = locomo.prepare_corpus(conv, tmp_path / "locomo")
    with sqlite3.connect(chat_db) as db:
        assert db.execute("SELECT count(*) FROM message").fetchone()[0] == 10
        assert db.execute("SELECT count(*) FROM attachment").fetchone()[0] == 1
    store = Store.open(tmp_path / "store" / "casper.sqlite")
    Indexer(store, chat_db, contacts, ZoneInfo(locomo.LOCOMO_TZ)).run()
    people = store.people()
    assert [p.name for p in people] == ["Bo"]
    assert people[0].handles == (conv.handle,)
    mine = store.message("locomo-conv-t-D1-1")
    theirs = store.message("locomo-conv-t-D1-2")
    assert mine is not None and mine.sender == "me"
    assert theirs is not None and theirs.sender == people[0].id
    assert theirs.text.endswith("[photo: a photo of a blue bowl]")
    assert mine.ts == conv.turns[0].ts.timestamp()
    store.close()


def test_prepare_corpus_reuses_unchanged_sources_and_rewrites_changed(tmp_path: Path) -> None:
    root = tmp_path / "locomo"
    conv = locomo.convert(_sample())
    chat_db, _ = locomo.prepare_corpus(conv, root)
    variant = root / conv.sample_id / "8x4-model"
    variant.mkdir()
    mtime = chat_db.stat().st_mtime_ns
    locomo.prepare_corpus(conv, root)
    assert chat_db.stat().st_mtime_ns == mtime and variant.exists()
    changed = _sample()
    changed["conversation"]["session_1"][0]["text"] = "edited"
    locomo.prepare_corpus(locomo.convert(changed), root)
    assert not variant.exists()  # indexes built from the old source are gone


def test_load_errors_have_hints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CasperError, match="not found") as err:
        locomo.load_locomo(tmp_path / "missing.json")
    assert "CASPER_LOCOMO" in (err.value.hint or "")
    with pytest.raises(CasperError, match="no LoCoMo data file"):
        locomo.load_locomo(None)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(CasperError, match="not in the LoCoMo format"):
        locomo.load_locomo(bad)
    good = tmp_path / "one.json"
    good.write_text(json.dumps([_sample(), _sample()]))
    monkeypatch.setenv("CASPER_LOCOMO", str(good))
    assert locomo.default_locomo_path() == good
    assert len(locomo.load_locomo(good, conversations=1)) == 1


def test_real_file_counts_and_errata() -> None:
    convs = locomo.load_locomo(shared_fixture(REAL))
    info = locomo.summary(convs)
    assert info["conversations"] == 10 and info["turns"] == 5882 and info["questions"] == 1986
    assert sorted(info["dropped_evidence_ids"]) == sorted(["D10:19", "D", "D:11:26", "D4:36"])
    assert info["without_evidence"] == 4
    assert info["duplicate_questions"] == 12
    counts: dict[str, int] = {}
    for q in (q for c in convs for q in c.questions):
        counts[q.category or ""] = counts.get(q.category or "", 0) + 1
    assert counts == {
        "single-hop": 841,
        "multi-hop": 282,
        "temporal": 321,
        "open-domain": 96,
        "adversarial": 446,
    }
    conv26 = convs[0]
    assert conv26.sample_id == "conv-26" and len(conv26.turns) == 419
    assert len({t.dia_id for t in conv26.turns}) == 419
    assert sum("[photo: " in t.text for c in convs for t in c.turns) == 1226
    assert sum(t.has_image for c in convs for t in c.turns) == 910
    for conv in convs:  # sessions never overlap: every turn is later than the one before
        stamps = [t.ts for t in conv.turns]
        assert stamps == sorted(stamps)


def test_real_conversation_ingests(tmp_path: Path) -> None:
    from casper.indexer.pipeline import Indexer
    from casper.store.db import Store

    conv = locomo.load_locomo(shared_fixture(REAL), conversations=1)[0]
    chat_db, contacts = locomo.prepare_corpus(conv, tmp_path)
    store = Store.open(tmp_path / "store" / "casper.sqlite")
    report = Indexer(store, chat_db, contacts, ZoneInfo(locomo.LOCOMO_TZ)).run()
    assert report.messages_total == 419
    evidence = {g for q in conv.questions for g in q.relevant}
    assert all(store.message(g) is not None for g in evidence)
    store.close()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("When did Ana go to the class?", "When did I go to the class?"),
        ("What is Ana's job?", "What is my job?"),
        ("Is Ana a painter?", "Am I a painter?"),
        ("What does Ana like?", "What do I like?"),
        ("What did Bo and Ana cook?", "What did Bo and I cook?"),
        ("Why did Bo call Ana?", "Why did Bo call me?"),
        ("Ana went where?", "I went where?"),
        ("What did Bo paint?", "What did Bo paint?"),
        ("Does Anastasia know Ana?", "Does Anastasia know me?"),
    ],
)
def test_first_person_questions(question: str, expected: str) -> None:
    assert locomo.first_person(question, "Ana") == expected


def test_a_possessive_without_s_becomes_my() -> None:
    asked = "When did James' mother and her friend visit him?"
    assert locomo.first_person(asked, "James") == "When did my mother and her friend visit him?"


def test_questions_are_first_person_unless_verbatim() -> None:
    raw = _sample()
    raw["qa"][0]["question"] = "What class did Ana take?"
    assert locomo.convert(raw).questions[0].question == "What class did I take?"
    assert locomo.convert(raw, verbatim=True).questions[0].question == "What class did Ana take?"
