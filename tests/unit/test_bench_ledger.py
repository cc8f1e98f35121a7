"""`make bench`'s ledger: each run's headline figures with commit and load, and every figure that
moved by more than 10 % since the last run printed."""

from __future__ import annotations

import json
from pathlib import Path

from bench import ledger

REPO = Path(__file__).resolve().parents[2]


def _results(folder: Path, warm_ms: float, first_s: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cli = {"load_avg_1m_start": 1.5, "warm_search": {"p50_ms": warm_ms}, "help": {"p50_ms": 150}}
    scale = {"first_search": {"time_to_first_lexical_search_s": first_s,
                              "load_avg_before": [1.2, 1.1, 1.0]}}  # fmt: skip
    (folder / "cli.json").write_text(json.dumps(cli))
    (folder / "scale.json").write_text(json.dumps(scale))
    return folder


def test_a_run_is_recorded_with_commit_and_load_and_compared_with_the_last(tmp_path: Path) -> None:
    results = _results(tmp_path, warm_ms=100.0, first_s=25.0)
    first = ledger.record(results)
    assert first["commit"] and first["load_avg_now"] and first["at"]
    assert first["figures"]["warm_search_p50_ms"] == {"value": 100.0, "load": 1.5}
    assert first["figures"]["first_lexical_search_1m_s"] == {"value": 25.0, "load": 1.2}
    assert ledger.moves(ledger.load_history(results / "history.json")) == []

    _results(tmp_path, warm_ms=109.0, first_s=30.0)  # +9 %: not printed; +20 %: printed
    ledger.record(results)
    found = ledger.moves(ledger.load_history(results / "history.json"))
    assert [(m["key"], m["worse"]) for m in found] == [("first_lexical_search_1m_s", True)]
    assert "WORSE" in ledger.report(found) and "25 → 30" in ledger.report(found)


def test_the_recorded_history_flags_this_rounds_two_slips() -> None:
    """The figures recorded in the ledger (the results committed at 023b338, then the two
    later measurements): comparing the round that slipped with the one before it prints
    both the warm search and the 1M first lexical search as worse."""
    runs = ledger.load_history(REPO / "bench" / "results" / "history.json")
    slipped = next(i for i, r in enumerate(runs) if r["commit"] == "856184f")
    found = {m["key"]: m for m in ledger.moves(runs[: slipped + 1])}
    assert found["warm_search_p50_ms"]["worse"] and found["first_lexical_search_1m_s"]["worse"]
    assert round(found["first_lexical_search_1m_s"]["change"], 2) == 0.23


def test_the_speed_figures_are_read_from_their_paired_runs(tmp_path: Path) -> None:
    """bench/speed.py's figures (first index against the faster engine, warm search and the
    interpreter's floor) and the freshness bench's are in the ledger; a first index that fell
    from 1.0 to 0.8 of the faster engine's rate is printed as worse."""

    def speed(ratio: float) -> None:
        doc = {"first_index": {"load_before": [1.1, 1.0, 1.0], "histories": {
                   "demo": {"auto (this checkout) vs faster engine": ratio}}},
               "warm_search": {"load_before": [1.2, 1.0, 1.0], "this checkout": {"p50_ms": 48.0},
                               "python -c pass": {"p50_ms": 22.0}}}  # fmt: skip
        (tmp_path / "speed.json").write_text(json.dumps(doc))
        fresh = {"load_avg_before": [0.9], "lexical_s": {"p50": 0.8},
                 "raw": {"service_rss_mb": 410.0}}  # fmt: skip
        (tmp_path / "freshness.json").write_text(json.dumps(fresh))

    speed(1.0)
    figures = ledger.record(tmp_path)["figures"]
    assert figures["first_index_demo_vs_faster"] == {"value": 1.0, "load": 1.1}
    assert figures["warm_search_paired_p50_ms"]["value"] == 48.0
    assert figures["python_start_p50_ms"]["value"] == 22.0
    assert figures["freshness_lexical_p50_s"] == {"value": 0.8, "load": 0.9}
    assert figures["service_rss_after_writes_mb"]["value"] == 410.0
    speed(0.8)
    ledger.record(tmp_path)
    found = ledger.moves(ledger.load_history(tmp_path / "history.json"))
    assert [(m["key"], m["worse"]) for m in found] == [("first_index_demo_vs_faster", True)]


def test_a_figure_not_measured_again_is_not_put_down_as_this_commit_s(tmp_path: Path) -> None:
    """A run of one benchmark leaves the others' old result files in place: their figures are
    not recorded again under the new commit (the ledger had written a 1M figure measured two
    rounds earlier as the current commit's)."""
    results = _results(tmp_path, warm_ms=100.0, first_s=25.0)
    ledger.record(results)
    cli = json.loads((results / "cli.json").read_text())
    cli["warm_search"]["p50_ms"] = 90.0  # only the CLI bench ran again
    (results / "cli.json").write_text(json.dumps(cli))
    second = ledger.record(results)
    assert "warm_search_p50_ms" in second["figures"]
    assert "first_lexical_search_1m_s" not in second["figures"]
    runs = ledger.load_history(results / "history.json")
    assert runs[-1]["figures"]["warm_search_p50_ms"]["value"] == 90.0


def test_runs_recorded_before_fingerprints_are_compared_by_value_and_load(tmp_path: Path) -> None:
    results = _results(tmp_path, warm_ms=100.0, first_s=25.0)
    old = {"commit": "abc", "at": "x", "by": "make bench", "machine": "m", "load_avg_now": [1],
           "figures": ledger.read_figures(results)}  # fmt: skip
    (results / "history.json").write_text(json.dumps({"runs": [old]}))
    assert ledger.record(results)["figures"] == {}


def test_in_a_checkout_only_result_files_written_since_the_commit_count(tmp_path: Path) -> None:
    import subprocess

    results = _results(tmp_path / "results", warm_ms=100.0, first_s=25.0)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "results"], check=True)
    assert ledger.record(results)["figures"] == {}  # every figure is an earlier commit's
    _results(results, warm_ms=90.0, first_s=25.0)  # the CLI bench ran: cli.json rewritten
    (results / "scale.json").write_text((results / "scale.json").read_text())  # unchanged
    assert set(ledger.record(results)["figures"]) == {"warm_search_p50_ms", "help_p50_ms"}
