"""Setup shared by the tests that index a corpus through the CLI.

Only the models are fakes (the backend factory is pointed at tests/fakes_search.py); the CLI,
SQLite and LanceDB are real. A "source" is a DemoCorpus or the folder that holds its `chat.db`
and `AddressBook` (a copy of one).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from casper.cli import app
from casper.errors import ModelUnavailable
from ingest.synthetic.demo import DemoCorpus
from tests.fakes_search import HashEmbedder, OverlapReranker

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

# `casper ARGS...` in a fresh interpreter, with the hash embedder for every model it would load
# (a child process is out of reach of the test's monkeypatching)
CLI_WITH_HASH_EMBEDDER = """
import json, sys
import casper.backends.factory as factory
from tests.fakes_search import HashEmbedder
factory.make_embedder = lambda cfg: HashEmbedder(64)
from casper.cli import app
sys.argv = ["casper", *json.loads(sys.argv[1])]
app()
"""

Source = DemoCorpus | Path


def source_paths(source: Source) -> tuple[Path, Path]:
    """(chat.db, AddressBook) of a corpus or of the folder that holds them."""
    if isinstance(source, Path):
        return source / "chat.db", source / "AddressBook"
    return source.chat_db, source.contacts


def index_args(home: Path, source: Source, *extra: str) -> list[str]:
    """`casper index` on `source` into `home`, contacts included, with `extra` options."""
    chat_db, contacts = source_paths(source)
    return ["index", "--home", str(home), "--chat-db", str(chat_db),
            "--contacts", str(contacts), *extra]  # fmt: skip


def use_fake_embedder(
    monkeypatch: pytest.MonkeyPatch, embedder: HashEmbedder | None = None
) -> None:
    """Every embedder the CLI builds is `embedder`, or a fresh HashEmbedder(64) each time."""
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: embedder or HashEmbedder(64))


def use_fake_search_models(
    monkeypatch: pytest.MonkeyPatch, embedder: HashEmbedder | None = None
) -> None:
    """The fake embedder and the word-overlap reranker."""
    import casper.backends.factory as factory

    use_fake_embedder(monkeypatch, embedder)
    monkeypatch.setattr(factory, "make_reranker", lambda cfg: (OverlapReranker(), None))


def index_home(home: Path, source: Source, *extra: str) -> Result:
    """Run `casper index` in this process (models as the caller set them); it must succeed."""
    result = runner.invoke(app, index_args(home, source, *extra))
    assert result.exit_code == 0, result.output
    return result


def demo_home_in_its_zone(place: Path, corpus: DemoCorpus) -> Path:
    """The demo indexed into `place` with fake search models, in the demo's own time zone (its
    history's days are the story's days, whatever the machine's zone)."""
    from casper.config import remember
    from ingest.synthetic.demo import DEMO_TIMEZONE

    remember(place, timezone=DEMO_TIMEZONE)
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(place, corpus)
    return place


def index_json(home: Path, source: Source, *extra: str) -> dict:
    """`casper index --json`: its report."""
    return json.loads(index_home(home, source, "--json", *extra).stdout)


def private_copy(corpus: DemoCorpus, dest: Path) -> DemoCorpus:
    """A copy of a module-wide corpus in `dest`, so a test may add rows to its chat.db."""
    shutil.copytree(corpus.chat_db.parent, dest)
    return dataclasses.replace(
        corpus, chat_db=dest / "chat.db", contacts=dest / "AddressBook", gold=dest / "gold.jsonl"
    )


def child_env(**extra: str) -> dict[str, str]:
    """The environment for `casper` in a child interpreter: this checkout, in-process."""
    return {**os.environ, "PYTHONPATH": str(REPO), "CASPER_SERVICE": "0", **extra}


def run_child(script: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python -c script json(args)` (see CLI_WITH_HASH_EMBEDDER), output captured."""
    return subprocess.run(
        [sys.executable, "-c", script, json.dumps(args)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def assert_unloadable_models_raise(
    load: Callable[[str], object], tmp_path: Path, uncached_hub_id: str, kind: str
) -> None:
    """A model adapter's `load(name)` refuses, with ModelUnavailable, a folder that does not
    exist, a hub id that is not cached (hinting `casper pull`) and an empty folder."""
    with pytest.raises(ModelUnavailable, match="does not exist"):
        load(str(tmp_path / "no-such-model"))
    with pytest.raises(ModelUnavailable) as info:
        load(uncached_hub_id)
    assert info.value.hint and "casper pull" in info.value.hint
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailable, match=f"cannot load {kind} model"):
        load(str(tmp_path / "empty"))
