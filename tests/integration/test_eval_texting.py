"""The texting set, `--split` and `make eval`'s suite through the real harness (fake embedder).

Real chat.db → Indexer → SQLite + LanceDB in tmp dirs; the texting corpus is built small (5% of
its filler, every episode) and the demo corpus tiny, to keep this fast.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import casper.cli.evaluate  # noqa: F401  (registers `eval`)
from casper.cli import app
from casper.config import load_config
from eval import harness, splits, suite
from eval.gold import load_gold
from tests.fakes_search import HashEmbedder

runner = CliRunner()
POOLS = {"when", "open", "spread", "event_date", "duration", "names"}


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    import casper.backends.factory as factory
    import ingest.synthetic as synthetic
    from ingest.synthetic import texting

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    monkeypatch.setattr(
        synthetic, "build_demo_corpus", lambda dest, **kw: synthetic.build_tiny_corpus(dest)
    )
    small = functools.partial(texting.build_texting_corpus, scale=0.05)
    monkeypatch.setattr(texting, "build_texting_corpus", small)


def test_texting_halves_share_one_index_and_report_every_pool(fakes: None) -> None:
    cfg = load_config()
    args = {"modes": ["hybrid"], "units": [(3, 1)], "rerank": False, "ks": (5, 10, 25)}
    doc = harness.run_eval(cfg, "texting", split="report", **args)
    gold = load_gold(cfg.data_dir / "eval" / "texting" / "source" / "gold.jsonl")
    assert doc["split"] == "report" and doc["info"]["split"] == "report"
    assert doc["scored_questions"] == len(splits.keep(gold, "report")) < len(gold)
    hybrid = next(r for r in doc["runs"] if r["label"].startswith("hybrid/lancedb/3x1"))
    assert set(hybrid["by_category"]) >= POOLS
    assert any("/" in c for c in hybrid["by_category"])  # and the fine kind/tags cells
    assert hybrid["metrics"]["message_recall@25"] > 0.2  # hashed words find planted facts
    verbatim = harness.run_eval(cfg, "texting-verbatim", split="tune", **args)
    assert all(i["reused"] for r in verbatim["runs"] for i in r["indexes"])
    assert verbatim["info"]["questions_style"].startswith("verbatim")


def test_cli_split_option(fakes: None, tmp_path: Path) -> None:
    args = ["eval", "--dataset", "synthetic", "--mode", "bm25", "--unit", "3x1", "--no-rerank",
            "--out", str(tmp_path), "--json"]  # fmt: skip
    done = runner.invoke(app, [*args, "--split", "report"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    assert doc["split"] == "report" and 0 < doc["questions"] < 30
    bad = runner.invoke(app, [*args, "--split", "held-out"])
    assert bad.exit_code == 1
    assert "unknown split 'held-out'" in bad.stderr and "hint:" in bad.stderr


def test_suite_writes_one_report_for_every_set_and_style(fakes: None, tmp_path: Path) -> None:
    out = tmp_path / "eval.md"
    missing = tmp_path / "no-locomo.json"
    assert suite.main(["--only", "texting", "locomo", "--out", str(out),
                       "--locomo", str(missing)]) == 0  # fmt: skip
    text = out.read_text()
    assert "## texting (first person)" in text
    assert "| locomo | first person | – | – | skipped: LoCoMo data file not found" in text
    assert "## Where the default loses" in text
    summary = json.loads(out.with_suffix(".json").read_text())["sets"]
    table = summary["texting"]["tables"][0]
    assert set(table["categories"]) >= POOLS
    assert set(table["categories"]["when"]["recall"]) == {
        "default", "literal", "bm25", "vector", "bm25 literal", "vector literal"
    }  # fmt: skip
    runs_dir = load_config().runs_dir
    assert len([p for p in runs_dir.glob("*.json") if not p.name.startswith("suite-")]) == 2
    (saved,) = runs_dir.glob("suite-*.json")  # every run of it, to rewrite the report from
    again = tmp_path / "again.md"
    assert suite.main(["--render", str(saved), "--out", str(again)]) == 0
    assert again.read_text() == text


def test_gold_style_is_a_named_set_over_the_synthetic_index(fakes: None) -> None:
    from eval import gold_style
    from eval.variants import RunSpec, variant_config

    cfg = load_config()
    (corpus,), info = harness.load_dataset(cfg, "gold-style")
    (synthetic,), _ = harness.load_dataset(cfg, "synthetic")
    assert (corpus.root, corpus.chat_db) == (synthetic.root, synthetic.chat_db)
    assert [i.id for i in corpus.items] == [i.id for i in load_gold(gold_style.DEFAULT_OUT)]
    assert variant_config(cfg, corpus, RunSpec("hybrid")).locale == "en_GB"  # day-first
    assert variant_config(cfg, synthetic, RunSpec("hybrid")).locale == cfg.locale
    assert info["locale"] == "en_GB"
