"""bench/results/scale.{json,md}: a full `python -m bench.scale` run keeps the records that
`--only first-search` and `python -m bench.vecmem` merged in, and every table row says which run
(command, time, load) measured it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.scale_report import main, save_full_run, save_results


def _load(before: float, after: float) -> dict[str, Any]:
    return {"load_avg_before": [before, 1.0, 1.0], "load_avg_after": [after, 1.0, 1.0]}


def _end_to_end(seconds: float) -> dict[str, Any]:
    rss = {"VmRSS": 300, "RssAnon": 200, "RssFile": 100}
    return {
        "messages": 900, "chunks": 600, "time_to_first_lexical_search_s": seconds,
        "first_index": {"lexical_ready_s": seconds - 1}, "cold_lexical_search": {"wall_s": 1.0},
        "after_kill": {"vectors_done": 200, "vectors_total": 600},
        "resume": {"embedded": 400, "missing_before": 400, "embeds_only_missing": True,
                   "wall_s": 3.0, "peak_rss_mb": 500},
        "noop_reindex": {"run_index_s": 0.2, "wall_s_process": 1.5, "embedded": 0},
        "index_peak_rss_mb": 500,
        "hybrid": {"queries": 50, "p50_ms": 20.0, "p95_ms": 30.0, "matrix_load_s": 0.5,
                   "vectors_file_mb": 1, "codes_in_memory_mb": 1, "rss_before_mb": rss,
                   "rss_after_queries_mb": rss},
    }  # fmt: skip


def _first_search(seconds: float) -> dict[str, Any]:
    return {
        "time_to_first_lexical_search_s": seconds, "cpu_s_to_first_lexical_search": 30.0,
        "parts_s": {"process_start_and_imports": 0.1, "ingest_and_open_index": 15.0,
                    "lexical_step": 13.0, "cold_search_in_process": 1.5},
        "cpu_s_parts": {"index_until_lexical_step": 17.0, "lexical_step": 14.0,
                        "cold_search_in_process": 1.4},
        "cold_search": {"fresh_service": {"wall_s": 0.9, "hits": 8}},
        "non_ingest_s": 15.0, "index_peak_rss_mb_until_lexical_ready": 640, "runs": 3,
        "all_runs_s": [seconds, seconds, seconds], "by": "bench.scale --only first-search",
        "at": "2026-11-24 10:00 UTC", **_load(1.17, 1.18),
    }  # fmt: skip


def _latency(p50: float) -> dict[str, Any]:
    return {
        "queries": 50, "vector_p50_ms": 11.0, "vector_cpu_p50_ms": 10.8, "hybrid_p50_ms": p50,
        "hybrid_p95_ms": 24.7, "hybrid_cpu_p50_ms": 19.4, "rss_after_mb": {"VmRSS": 353.6},
        "by": "bench.vecmem", "at": "2026-11-24 11:00 UTC", **_load(1.04, 1.05),
    }  # fmt: skip


def _synth(recall: float, by: str, at: str) -> dict[str, Any]:
    return {
        "chunks": 1000, "queries": 100, "recall@10_vs_exact_float32": recall,
        "worst_query_recall@10": 0.9, "vector_p50_ms": 16.2, "vector_cpu_p50_ms": 15.9,
        "vector_cache_resident_peak_mb": 53.4, "codes_mb": 46, "float16_file_mb": 732,
        "depth_sweep": [{"share": 256, "recall@10": 0.99, "p50_ms": 8.5}],
        "by": by, "at": at, **_load(0.96, 1.29),
    }  # fmt: skip


def _full_run(out: Path, seconds: float, synth: dict[str, Any]) -> dict[str, Any]:
    """What `bench.scale.main` merges in after a full run."""
    records = {
        "machine": "x86_64 Linux, 2 cores (shared)", "messages_generated": 1000,
        "end_to_end": _end_to_end(seconds),
        "full_run": {"by": "bench.scale", "at": "2026-11-24 12:00 UTC", **_load(2.5, 3.5)},
    }  # fmt: skip
    return save_full_run(out, records, synth)


def _table(out: Path) -> list[str]:
    return [line for line in (out / "scale.md").read_text().splitlines() if line.startswith("|")]


def test_a_full_run_keeps_first_search_and_vecmem_records(tmp_path: Path) -> None:
    old_synth = _synth(0.95, "bench.vecmem", "2026-11-24 09:00 UTC")
    save_results(tmp_path, {"first_search": _first_search(30.8)})
    save_results(tmp_path, {"vector_memory": {"latency": _latency(19.2), "synth": old_synth}})
    # an unlabelled full run from before: its loads and its own recall record
    save_results(tmp_path, {"vector_recall": {"chunks": 5}, **_load(9.6, 11.4)})

    _full_run(tmp_path, 286.3, _synth(0.997, "bench.scale", "2026-11-24 12:30 UTC"))

    saved = json.loads((tmp_path / "scale.json").read_text())
    assert saved["first_search"]["time_to_first_lexical_search_s"] == 30.8
    assert saved["vector_memory"]["latency"]["hybrid_p50_ms"] == 19.2
    # one SYNTH record, the newest run's, whichever command ran it
    assert saved["vector_memory"]["synth"]["recall@10_vs_exact_float32"] == 0.997
    assert saved["vector_memory"]["synth"]["by"] == "bench.scale"
    assert "vector_recall" not in saved and "load_avg_before" not in saved
    assert saved["end_to_end"]["time_to_first_lexical_search_s"] == 286.3


def test_each_table_row_names_the_run_that_measured_it(tmp_path: Path) -> None:
    save_results(tmp_path, {"first_search": _first_search(30.8)})
    save_results(tmp_path, {"vector_memory": {"latency": _latency(19.2)}})
    _full_run(tmp_path, 286.3, _synth(0.997, "bench.scale", "2026-11-24 12:30 UTC"))

    rows = _table(tmp_path)[2:]  # after the header and its rule
    assert all(row.count(" | ") == 3 for row in rows), rows  # four cells each
    by_measure = {row.split(" | ")[0]: row.rsplit(" | ", 1)[1] for row in rows}
    first = by_measure["| time to first lexical search from a cold start (FAKE)"]
    assert first == "`bench.scale`, 2026-11-24 12:00 UTC, load 2.5 → 3.5 |"
    assert any(
        "30.8 s" in row and row.endswith("`bench.scale --only first-search`, "
                                         "2026-11-24 10:00 UTC, load 1.17 → 1.18 |")
        for row in rows
    )  # fmt: skip
    assert any(
        "19.2 / 24.7 ms" in row and "`bench.vecmem`, 2026-11-24 11:00" in row for row in rows
    )
    recall = [row for row in rows if row.startswith("| vector recall@10")]
    assert len(recall) == 1 and "**0.997**" in recall[0]
    assert recall[0].endswith("`bench.scale`, 2026-11-24 12:30 UTC, load 0.96 → 1.29 |")
    assert any(row.startswith("| rescoring `count // 256`") and "0.99" in row for row in rows)


def test_first_search_alone_keeps_the_full_run(tmp_path: Path) -> None:
    _full_run(tmp_path, 286.3, _synth(0.997, "bench.scale", "2026-11-24 12:30 UTC"))
    save_results(tmp_path, {"first_search": _first_search(29.0)}, drop=("lexical_only",))

    saved = json.loads((tmp_path / "scale.json").read_text())
    assert saved["end_to_end"]["time_to_first_lexical_search_s"] == 286.3
    assert saved["full_run"]["at"] == "2026-11-24 12:00 UTC"
    table = "\n".join(_table(tmp_path))
    assert "**29.0 s** wall" in table and "**286.3 s**" in table


def test_rows_of_an_unlabelled_full_run_say_so(tmp_path: Path) -> None:
    legacy = {"machine": "x", "messages_generated": 1000, "end_to_end": _end_to_end(286.3)}
    save_results(tmp_path, {**legacy, **_load(9.6, 11.4)})
    first = _table(tmp_path)[2]
    assert first.endswith("`bench.scale` (unlabelled), load 9.6 → 11.4 |")


def test_records_an_older_full_run_dropped_can_be_taken_back(tmp_path: Path) -> None:
    """An older bench.scale rewrote scale.json whole; `--keep-from` the file before it brings
    back what that run dropped, and not what it replaced."""
    before = tmp_path / "before.json"
    before.write_text(json.dumps({
        "first_search": _first_search(30.8), "vector_memory": {"latency": _latency(19.2)},
        "end_to_end": _end_to_end(99.0), **_load(9.6, 11.4),
    }))  # fmt: skip
    rewritten = {"machine": "x", "messages_generated": 1000, "end_to_end": _end_to_end(50.0)}
    save_results(tmp_path, {**rewritten, **_load(2.0, 2.5)})

    main(["--out", str(tmp_path), "--keep-from", str(before)])

    saved = json.loads((tmp_path / "scale.json").read_text())
    assert saved["first_search"]["time_to_first_lexical_search_s"] == 30.8
    assert saved["vector_memory"]["latency"]["hybrid_p50_ms"] == 19.2
    assert saved["end_to_end"]["time_to_first_lexical_search_s"] == 50.0
    assert saved["load_avg_before"][0] == 2.0
    assert "**30.8 s** wall" in (tmp_path / "scale.md").read_text()
