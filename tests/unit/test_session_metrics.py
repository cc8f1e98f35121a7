"""Session-level recall as memory systems publish it (LoCoMo `session_N`, LongMemEval any/all)."""

from __future__ import annotations

from eval import locomo, metrics, report


def _session(guid: str) -> str | None:
    return guid.split(":")[0] if ":" in guid else None


def test_k_counts_distinct_sessions_in_rank_order() -> None:
    # three chunks, the first two inside session s1: s1 takes one slot, then s2, then s3
    chunks = [["s1:1", "s1:2"], ["s1:3", "s2:1"], ["s3:1"]]
    assert metrics.rank_sessions(chunks, _session) == ["s1", "s2", "s3"]
    one = metrics.score_session_level(chunks, {"s2:9"}, _session, ks=(1, 2))
    assert one["session_recall@1"] == 0.0  # the evidence's message need not be retrieved:
    assert one["session_recall@2"] == 1.0  # its session is what counts


def test_recall_any_and_all_differ_on_multi_session_evidence() -> None:
    chunks = [["s1:1"], ["s4:1"], ["s2:1"], ["s3:1"]]
    scores = metrics.score_session_level(chunks, {"s1:5", "s3:2", "s3:7"}, _session, ks=(2, 4))
    assert scores["session_recall@2"] == 0.5  # s1 of {s1, s3}
    assert scores["session_any@2"] == 1.0
    assert scores["session_all@2"] == 0.0
    assert scores["session_all@4"] == scores["session_recall@4"] == 1.0


def test_messages_without_a_session_still_take_a_slot() -> None:
    chunks = [["filler"], ["other"], ["s1:1"]]
    scores = metrics.score_session_level(chunks, {"s1:1"}, _session, ks=(2, 3))
    assert scores["session_any@2"] == 0.0
    assert scores["session_any@3"] == 1.0


def test_score_question_adds_sessions_only_when_the_corpus_has_them() -> None:
    chunks = [["s1:1"]]
    assert not any(k.startswith("session_") for k in metrics.score_question(chunks, {"s1:1"}))
    scored = metrics.score_question(chunks, {"s1:1"}, session_of=_session)
    assert scored["session_recall@5"] == scored["session_all@10"] == 1.0


def test_dataset_guids_map_to_their_session() -> None:
    guid = locomo.message_guid("conv-26", "D13:7")
    assert locomo.session_of_guid(guid) == "locomo-conv-26#session_13"
    assert locomo.session_of_guid(locomo.message_guid("conv-26", "D3:1")) != (
        locomo.session_of_guid(locomo.message_guid("conv-30", "D3:1"))
    )
    assert locomo.session_of_guid("realtalk-chat-1-emi-elise-D2-14").endswith("#session_2")
    assert locomo.session_of_guid("p:1234") is None


def test_the_report_has_a_session_section_when_scored() -> None:
    run = {
        "label": "hybrid/lancedb/3x1/all-minilm-l6-v2",
        "mode": "hybrid",
        "rerank": False,
        "literal": False,
        "metrics": {"message_recall@10": 0.5, "session_recall@10": 0.9, "session_all@10": 0.8},
        "by_category": {},
        "latency_ms": {"p50": 1.0, "p95": 2.0},
    }
    doc = {"ks": [10], "runs": [run]}
    header, rows = report.summary_rows(doc)
    assert "sess R@10" in header and "sess all@10" in header
    assert rows[0][header.index("sess R@10")] == "90.0"
    text = "\n".join(report.session_section(doc))
    assert "session-level recall" in text and "| 80.0 |" in text
    no_sessions = {"ks": [10], "runs": [{**run, "metrics": {"message_recall@10": 0.5}}]}
    assert report.session_section(no_sessions) == []


def test_make_eval_report_shows_each_sets_session_recall() -> None:
    run = {
        "label": "hybrid/lancedb/3x1/all-minilm-l6-v2",
        "mode": "hybrid",
        "lexical": "lancedb",
        "rerank": False,
        "literal": False,
        "unit": "3x1",
        "embedder": "m",
        "metrics": {"message_recall@10": 0.5, "session_recall@10": 0.875},
        "by_category": {},
        "latency_ms": {"p50": 1.0, "p95": 2.0},
    }
    doc = {"ks": [5, 10, 25], "runs": [run], "scored_questions": 3}
    entry = {"dataset": "locomo", "style": "first person", "doc": doc, "halves": {},
             "seconds": 1.0, "load": (1.0, 1.0)}  # fmt: skip
    text = report.suite_markdown([entry], {})
    assert "### session-level recall" in text and "| 87.5 |" in text


def test_a_narrow_terminal_keeps_session_recall_before_the_lesser_columns() -> None:
    from casper.cli.evaluate import fit_columns

    header = ["run", "msg R@5", "msg R@10", "msg R@25", "sess R@5", "sess R@10", "sess all@10",
              "chunk R@10", "MRR@10", "hit@10", "p95 ms"]  # fmt: skip
    rows = [["hybrid/lancedb/3x1", *["100.0"] * 10]]
    kept, _cut, dropped = fit_columns(header, rows, 80)
    assert "sess R@10" in kept and "msg R@10" in kept
    assert "chunk R@10" in dropped and "p95 ms" in dropped
