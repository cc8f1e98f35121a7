"""The backend factory and its location helpers, without importing any model library."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from casper.backends import factory, loading
from casper.backends.embedder import family_prefixes
from casper.config import Config
from casper.errors import ModelUnavailable

HEAVY = {"torch", "mlx", "mlx_lm", "sentence_transformers", "transformers"}


@pytest.fixture(autouse=True)
def _no_heavy_imports() -> Iterator[None]:
    before = set(sys.modules)
    yield
    assert not HEAVY & (set(sys.modules) - before)


def _cfg(tmp_path: Path, **values: object) -> Config:
    return Config(data_dir=tmp_path, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize(("rerank", "model"), [(False, "cross-encoder/x"), (True, None)])
def test_reranker_switched_off_is_none_without_reason(
    tmp_path: Path, rerank: bool, model: str | None
) -> None:
    assert factory.make_reranker(_cfg(tmp_path, rerank=rerank, rerank_model=model)) == (None, None)


def test_reranker_bad_path_gives_none_and_a_reason(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-reranker")
    reranker, reason = factory.make_reranker(_cfg(tmp_path, rerank_model=missing))
    assert reranker is None
    assert reason and missing in reason and "does not exist" in reason


def test_engine_and_embedder_bad_paths_raise(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="does not exist") as info:
        factory.make_engine(_cfg(tmp_path, llm_model=str(tmp_path / "no-llm")))
    assert info.value.hint
    with pytest.raises(ModelUnavailable, match="does not exist"):
        factory.make_embedder(_cfg(tmp_path, embed_model="~/no-such-embedder"))


def test_local_model_path_tells_paths_from_hub_ids(tmp_path: Path) -> None:
    assert loading.local_model_path(str(tmp_path)) == tmp_path
    assert loading.local_model_path("mlx-community/Qwen3-4B-4bit") is None
    for missing in ("./models/x", "/abs/missing", "~/missing", "a/b/c"):
        with pytest.raises(ModelUnavailable):
            loading.local_model_path(missing)


@pytest.mark.parametrize(("value", "offline"), [("1", True), ("true", True), ("0", False)])
def test_hub_offline_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, offline: bool
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    assert loading.hub_offline() is offline


def test_load_failure_hints_fit_the_situation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = loading.load_failure("rerank model", "org/model", OSError("not found\nmore"))
    assert error.message == "cannot load rerank model org/model: OSError: not found"
    assert error.hint and "casper pull" in error.hint
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    assert "connection" in (loading.load_failure("x", "org/model", ValueError()).hint or "")
    assert "not a loadable model" in (
        loading.load_failure("x", str(tmp_path), KeyError()).hint or ""
    )


@pytest.mark.parametrize(
    ("model", "prefixes"),
    [
        ("intfloat/e5-small-v2", ("query: ", "passage: ")),
        ("nomic-ai/nomic-embed-text-v1.5", ("search_query: ", "search_document: ")),
        (
            "BAAI/bge-small-en-v1.5",
            ("Represent this sentence for searching relevant passages: ", ""),
        ),
        ("BAAI/bge-m3", ("", "")),
        ("sentence-transformers/all-MiniLM-L6-v2", ("", "")),
    ],
)
def test_family_prefixes(model: str, prefixes: tuple[str, str]) -> None:
    assert family_prefixes(model) == prefixes
