"""Fixtures shared by the integration tests that run the CLI on the demo corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.synthetic import build_demo_corpus
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_home, use_fake_search_models


@pytest.fixture(scope="module")
def demo_corpus(tmp_path_factory: pytest.TempPathFactory) -> DemoCorpus:
    """The synthetic demo corpus (chat.db, AddressBook, gold, the generator's facts), built once
    per module; read-only (take `tests.helpers.private_copy` to add rows)."""
    return build_demo_corpus(tmp_path_factory.mktemp("demo") / "src")


@pytest.fixture
def demo_home(demo_corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with the demo corpus indexed once (explicit --chat-db and --contacts) with the
    fake embedder and reranker, which stay in place for the test."""
    home = tmp_path / "home"
    use_fake_search_models(monkeypatch)
    index_home(home, demo_corpus, "--json")
    return home
