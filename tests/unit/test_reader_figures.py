"""What a reader gets: recall and any-gold at 5 and 8 hits, answer-word coverage, and the
chance level session recall is read beside (eval.reader)."""

from __future__ import annotations

from types import SimpleNamespace

from eval import reader, report, verdict


def _hit(*messages: tuple[str, str]) -> SimpleNamespace:
    return SimpleNamespace(messages=[SimpleNamespace(guid=g, text=t) for g, t in messages])


def test_hits_count_every_message_they_show() -> None:
    hits = [["a", "b", "c"]] + [[f"x{i}"] for i in range(5)] + [["g", "h"]]
    scores = reader.score_reader(hits, [""] * len(hits), {"c", "h"})
    # "c" is the first hit's last message, "h" in the seventh hit: 5 hits show one of two
    assert scores["reader_recall@5"] == 0.5 and scores["reader_hit@5"] == 1.0
    assert scores["reader_recall@8"] == 1.0
    assert scores["reader_messages@5"] == 7.0 and scores["reader_messages@8"] == 10.0
    missed = reader.score_reader(hits, [""] * len(hits), {"zz"})
    assert missed["reader_hit@8"] == 0.0 and missed["reader_recall@8"] == 0.0


def test_answer_words_are_the_answers_content_words_found_in_the_hits() -> None:
    assert reader.answer_words("She took a pottery class in Galveston") == {
        "took", "pottery", "class", "galveston",
    }  # fmt: skip
    assert reader.answer_words("the") == set()
    texts = ["me: signed up for Pottery classes!!", "x", "x", "x", "x", "Emi: in galveston"]
    scores = reader.score_reader([["1"]] * 6, texts, {"1"}, "a pottery class in Galveston")
    assert scores["answered"] == 1.0
    assert scores["answer_words@5"] == 2 / 3  # pottery, class; Galveston only in the sixth hit
    assert scores["answer_words@8"] == 1.0
    unanswered = reader.score_reader([["1"]], ["pottery"], {"1"}, None)
    assert unanswered["answered"] == 0.0 and unanswered["answer_words@5"] == 0.0


def test_the_gold_answer_is_read_from_expected() -> None:
    assert reader.answer_of({"answer_contains": ["7 May 2023"]}) == "7 May 2023"
    assert reader.answer_of({"abstain": True}) is None
    assert reader.answer_of(None) is None


def test_session_chance_is_k_over_the_sessions_of_the_history_and_of_the_chat() -> None:
    rows = [(f"c1-s{s}-{i}", 1) for s in range(20) for i in range(3)]
    rows += [(f"c2-s{s}-{i}", 2) for s in range(5) for i in range(2)] + [("filler", 2)]
    sessions = reader.sessions_by_chat(rows, lambda g: g.rsplit("-", 1)[0] if "-s" in g else None)
    chance = reader.session_chance({"c2-s1-0"}, *sessions)
    assert chance["session_chance@5"] == 5 / 25 and chance["session_chance@10"] == 10 / 25
    assert chance["session_chance_chat@5"] == 1.0  # the right chat has five sessions
    assert reader.session_chance({"c1-s0-0"}, *sessions)["session_chance_chat@10"] == 10 / 20
    assert reader.session_chance({"filler"}, *sessions) == {}


def test_score_hits_reads_hits_as_a_search_returns_them() -> None:
    hits = [_hit(("1", "we went hiking"), ("2", "nice")), _hit(("3", "ok"))]
    scores = reader.score_hits(hits, {"2"}, {"answer_contains": ["hiking"]})
    assert scores["reader_hit@5"] == 1.0 and scores["answer_words@5"] == 1.0
    assert "session_chance@10" not in scores


def test_the_report_shows_what_a_reader_gets_and_the_chance_level() -> None:
    metrics = {
        "message_recall@10": 0.5, "reader_recall@5": 0.6, "reader_hit@5": 0.75,
        "reader_messages@5": 13.0, "reader_recall@8": 0.7, "reader_hit@8": 0.8,
        "reader_messages@8": 21.0, "answered": 0.5, "answer_words@5": 0.2, "answer_words@8": 0.3,
        "session_recall@10": 0.9, "session_chance@10": 0.38, "session_chance_chat@10": 0.65,
    }  # fmt: skip
    run = {"label": "hybrid/lancedb/3x1/m", "mode": "hybrid", "rerank": False, "literal": False,
           "unit": "3x1", "embedder": "m", "lexical": "lancedb", "metrics": metrics,
           "by_category": {}, "latency_ms": {"p50": 1.0, "p95": 2.0}}  # fmt: skip
    doc = {"dataset": "x", "created": "now", "questions": 4, "scored_questions": 4, "ks": [10],
           "runs": [run]}  # fmt: skip
    text = report.to_markdown(doc)
    assert "what a reader gets: 5 and 8 hits" in text
    # answer words over the answered questions only: 0.2 / 0.5
    assert "| 60.0 | 75.0 | 13.0 | 70.0 | 80.0 | 21.0 | 40.0 | 60.0 |" in text
    assert "chance @10" in text and "38.0" in text and "65.0" in text


def test_halves_merge_exactly_with_the_answer_share() -> None:
    def doc(questions: int, answered: float, words: float) -> dict[str, object]:
        m = {"answered": answered, "answer_words@5": words, "message_recall@5": 0.0}
        run = {"label": "r", "questions": questions, "metrics": m, "by_category": {},
               "latency_ms": {"p50": 1.0, "p95": 1.0}}  # fmt: skip
        return {"dataset": "d", "runs": [run], "questions": questions}

    whole = verdict.merge([doc(10, 1.0, 0.5), doc(30, 0.5, 0.1)])["runs"][0]["metrics"]
    # 10 answered at 0.5 and 15 answered at 0.2: 8 answer-word units over 25 answered
    assert abs(whole["answer_words@5"] / whole["answered"] - (5 + 3) / 25) < 1e-12


def test_message_recall_reads_the_searchs_own_message_ranking_when_it_has_one() -> None:
    from eval import metrics

    chunks = [["a", "b", "c"], ["d", "e", "f"]]  # hits: windows chosen around b and e
    scored = metrics.score_question(chunks, {"b", "e"}, (2,), messages=["b", "e", "a"])
    assert scored["message_recall@2"] == 1.0  # the ranking: b, e
    assert metrics.score_question(chunks, {"b", "e"}, (2,))["message_recall@2"] == 0.5
    assert scored["chunk_recall@2"] == 1.0  # hits as shown


def test_the_ranking_is_read_by_guid_and_absent_without_one() -> None:
    result = SimpleNamespace(messages=(7, 3, 99))
    assert reader.ranked_messages(result, {3: "g3", 7: "g7"}) == ["g7", "g3"]
    assert reader.ranked_messages(SimpleNamespace(hits=[]), {}) is None
