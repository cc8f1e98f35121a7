"""`casper chat` builds its store, index and models once per session, not once per turn."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.service_helpers import runner


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    import casper.backends.factory as factory
    from casper.store.db import Store
    from tests.fakes_search import HashEmbedder, OverlapReranker
    from tests.service_server import SearchThenAnswerEngine

    built: Counter[str] = Counter()

    def counting(name: str, make):  # noqa: ANN001, ANN202
        def build(cfg):  # noqa: ANN001, ANN202
            built[name] += 1
            return make()

        return build

    monkeypatch.setattr(factory, "make_embedder", counting("embedder", lambda: HashEmbedder(64)))
    monkeypatch.setattr(
        factory, "make_reranker", counting("reranker", lambda: (OverlapReranker(), None))
    )
    monkeypatch.setattr(factory, "make_engine", counting("engine", SearchThenAnswerEngine))
    real_open = Store.open.__func__

    def open_counted(cls, *args, **kwargs):  # noqa: ANN001, ANN202
        built["store"] += 1
        return real_open(cls, *args, **kwargs)

    monkeypatch.setattr(Store, "open", classmethod(open_counted))
    return built


@pytest.mark.parametrize("flag", ["--no-service", None])
def test_three_turns_build_everything_once(home: Path, counted: Counter[str], flag) -> None:  # noqa: ANN001
    from casper.cli import app

    turns = "where is the climbing gym?\nwho brings the pie?\nwhat about the dentist?\n/quit\n"
    args = ["chat", "--home", str(home)] + ([flag] if flag else [])
    result = runner.invoke(app, args, input=turns)  # CASPER_SERVICE=0 in tests: in-process
    assert result.exit_code == 0, result.output
    assert result.stdout.count("Here is what your messages say.") == 3
    assert counted == {"store": 1, "embedder": 1, "reranker": 1, "engine": 1}
