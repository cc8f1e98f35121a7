"""Real-load tests of CrossEncoderReranker on a tiny self-built BERT cross-encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.backends.reranker import CrossEncoderReranker
from tests.helpers import assert_unloadable_models_raise

pytestmark = pytest.mark.slow

QUERY = "when did we talk about the dentist"
TEXTS = ["dinner with sam", "the dentist party", "ok yes", "where did alex talk about lunch"]


@pytest.fixture(scope="module")
def reranker(tiny_cross_encoder_path: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(str(tiny_cross_encoder_path), batch_size=2)


def test_scores_align_with_inputs(reranker: CrossEncoderReranker) -> None:
    scores = reranker.score(QUERY, TEXTS)
    assert len(scores) == len(TEXTS)
    assert all(isinstance(s, float) for s in scores)
    assert len(set(scores)) > 1  # initializer_range=0.5 keeps random scores apart
    assert reranker.score(QUERY, TEXTS) == scores
    assert reranker.score(QUERY, []) == []


def test_permuting_inputs_permutes_scores(reranker: CrossEncoderReranker) -> None:
    scores = reranker.score(QUERY, TEXTS)
    order = [2, 0, 3, 1]
    permuted = reranker.score(QUERY, [TEXTS[i] for i in order])
    assert permuted == pytest.approx([scores[i] for i in order], abs=1e-6)


def test_name_is_the_model_id(
    reranker: CrossEncoderReranker, tiny_cross_encoder_path: Path
) -> None:
    assert reranker.name == str(tiny_cross_encoder_path)


def test_unloadable_models_raise_model_unavailable(tmp_path: Path) -> None:
    assert_unloadable_models_raise(
        CrossEncoderReranker, tmp_path, "cross-encoder/not-a-cached-model", "rerank"
    )
