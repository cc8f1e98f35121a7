"""Adaptive fusion: a leg's weight follows how sure it is (how far its best hit stands above
its typical one); with no reason to differ it is the fixed-weight convex fusion."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.config import load_config
from casper.errors import ConfigError
from casper.search import fusion
from casper.search.fusion import adapt_weights, hybrid, peak


def leg(ids: str, scores: list[float]) -> list[tuple[str, float]]:
    return list(zip(ids, scores, strict=True))


def order(ranked: list[tuple[str, float]]) -> str:
    return "".join(item for item, _ in ranked)


def test_peak_reads_a_clear_winner_high_and_a_flat_leg_low() -> None:
    assert peak([0.9, 0.3, 0.29, 0.28, 0.2]) > 0.8
    assert peak([5.0, 4.99, 4.98, 4.97, 1.0]) < 0.01
    assert peak([2.0, 2.0, 2.0]) == 0.0  # cannot tell its hits apart at all
    assert peak([3.0]) == peak([3.0, 1.0]) == 0.5  # too few hits to read: middling
    scores = [7.0, 3.0, 2.5, 1.0]
    assert peak(scores) == pytest.approx(peak([10 * s - 4 for s in scores]))  # BM25 or cosine


def test_a_flat_leg_gives_way_to_a_leg_with_one_clear_winner() -> None:
    """BM25 nearly blind (its nine hits score alike) must not bury the vector leg's one clear
    answer under them, as the fixed 0.4 / 0.6 split does."""
    flat = leg("pqrstuwxyz", [5.0, 4.99, 4.98, 4.97, 4.96, 4.95, 4.94, 4.93, 4.92, 1.0])
    sure = leg("vabcd", [0.9, 0.3, 0.29, 0.28, 0.2])
    assert order(hybrid(sure, [flat]))[:1] == "p"
    assert order(hybrid(sure, [flat], adaptive=True))[:1] == "v"
    weights = adapt_weights([sure, flat], [0.4, 0.6])
    assert weights[0] > 0.4 and weights[1] < 0.6 and weights[1] < weights[0]
    assert sum(weights) == pytest.approx(1.0)  # fused scores keep their range


def test_the_surer_leg_gains_weight_in_proportion_and_the_total_is_kept() -> None:
    """Weights follow peakedness × the fixed weight; a flat leg keeps the floor's share."""
    clear = leg("abcde", [1.0, 0.2, 0.1, 0.05, 0.0])  # peak 0.9
    middling = leg("fghij", [1.0, 0.7, 0.5, 0.3, 0.0])  # peak 0.5
    flat = leg("klmno", [1.0, 1.0, 1.0, 1.0, 0.0])  # peak 0 → the floor
    w = adapt_weights([clear, middling, flat], [0.4, 0.3, 0.3])
    assert sum(w) == pytest.approx(1.0)
    assert w[0] / w[1] == pytest.approx((0.4 * 0.9) / (0.3 * 0.5))
    assert w[2] / w[1] == pytest.approx(fusion.PEAK_FLOOR / 0.5)


@pytest.mark.parametrize("ngrams", [False, True])
def test_equally_peaked_legs_fuse_exactly_as_the_fixed_weights(ngrams: bool) -> None:
    """The same shape of scores (whatever their scale): no reason to differ."""
    vector = leg("abcde", [0.8, 0.6, 0.5, 0.45, 0.2])
    words = leg("edcbf", [8.0, 6.0, 5.0, 4.5, 2.0])
    lexical = [words, leg("eaghi", [4.0, 3.0, 2.5, 2.25, 1.0])] if ngrams else [words]
    for bounds in (None, [(0.0, 9.0)] * len(lexical)):
        fixed = hybrid(vector, lexical, lexical_bounds=bounds)
        adapted = hybrid(vector, lexical, lexical_bounds=bounds, adaptive=True)
        assert order(adapted) == order(fixed)
        assert [s for _, s in adapted] == pytest.approx([s for _, s in fixed])


def test_empty_legs_keep_their_weight_and_a_lone_leg_is_untouched() -> None:
    sure = leg("vabcd", [0.9, 0.3, 0.29, 0.28, 0.2])
    assert adapt_weights([sure, []], [0.4, 0.6]) == pytest.approx([0.4, 0.6])
    assert adapt_weights([[], []], [0.4, 0.6]) == [0.4, 0.6]
    assert hybrid(sure, [[]], adaptive=True) == hybrid(sure, [[]])
    with pytest.raises(ValueError):
        adapt_weights([sure], [0.4, 0.6])


def test_fusion_is_a_setting_checked_when_the_config_loads(tmp_path: Path) -> None:
    assert load_config(tmp_path).fusion == "convex"  # the default (docs/retrieval.md)
    (tmp_path / "config.toml").write_text('fusion = "adaptive"\n')
    assert load_config(tmp_path).fusion == "adaptive"
    (tmp_path / "config.toml").write_text('fusion = "max"\n')
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert "fusion" in err.value.message and "adaptive" in (err.value.hint or "")
