"""Tune/report halves: LoCoMo conv-26…43 tunes and the rest reports; other sets halve by id."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from casper.config import load_config
from casper.errors import CasperError
from eval import harness, splits
from eval.gold import GoldItem
from tests.unit.test_locomo import REAL, _sample


def test_locomo_tune_half_is_conv_26_to_43() -> None:
    ids = [json_id["sample_id"] for json_id in json.loads(REAL.read_text("utf-8"))]
    halves = {i: splits.conversation_half(i) for i in ids}
    assert sorted(i for i, h in halves.items() if h == "tune") == [
        "conv-26", "conv-30", "conv-41", "conv-42", "conv-43"
    ]  # fmt: skip
    assert sorted(i for i, h in halves.items() if h == "report") == [
        "conv-44", "conv-47", "conv-48", "conv-49", "conv-50"
    ]  # fmt: skip
    assert splits.conversation_half("conv-25") == "report"


def test_question_halves_are_stable_disjoint_and_about_even() -> None:
    items = [GoldItem(f"tx-{i:03d}", "q", ("g",)) for i in range(1, 201)]
    tune, report = splits.keep(items, "tune"), splits.keep(items, "report")
    assert splits.keep(items, "all") == items
    assert {i.id for i in tune}.isdisjoint(i.id for i in report)
    assert len(tune) + len(report) == len(items)
    assert 70 <= len(tune) <= 130
    assert splits.question_half("tx-001") == splits.question_half("tx-001")


def test_unknown_split_names_the_choices() -> None:
    with pytest.raises(CasperError) as exc:
        splits.check("held-out")
    assert "tune" in (exc.value.hint or "")


def test_locomo_dataset_keeps_only_the_conversations_of_the_half(tmp_path: Path) -> None:
    data = []
    for sample_id in ("conv-30", "conv-47"):
        sample = copy.deepcopy(_sample())
        sample["sample_id"] = sample_id
        data.append(sample)
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    cfg = load_config()
    for split, expected in (("tune", ["conv-30"]), ("report", ["conv-47"]),
                            ("all", ["conv-30", "conv-47"])):  # fmt: skip
        corpora, info = harness.load_dataset(cfg, "locomo", locomo_path=path, split=split)
        assert [c.name for c in corpora] == expected
        assert info["split"] == split and info["conversations"] == len(expected)
    with pytest.raises(CasperError, match="no questions"):
        harness.load_dataset(cfg, "locomo", locomo_path=path, conversations=1, split="report")


def test_a_gold_file_of_abstention_questions_still_loads_whole(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "a1", "question": "What is my door code?"}\n')
    (corpus,), info = harness.load_dataset(load_config(), str(path))
    assert [i.id for i in corpus.items] == ["a1"] and info["split"] == "all"
