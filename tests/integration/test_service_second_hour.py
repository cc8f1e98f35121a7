"""The service in the second hour: `casper index` hands its run to the running service (whose
embedder is loaded: no model load in the command), and the service keeps only what it uses
(a chat model that is not downloaded is never imported; freed memory is given back after an
auto-index run and when idle). The figures are in docs/performance.md ("Service memory").
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from casper.service import client
from ingest.synthetic import append_messages
from tests.helpers import child_env, private_copy, run_child

runner = CliRunner()


@pytest.fixture
def live(demo_corpus, tmp_path: Path) -> tuple[Path, Path]:  # noqa: ANN001
    """(home, chat.db): a private copy of the demo corpus, indexed with the fake models."""
    from tests.helpers import index_home, use_fake_search_models

    source = private_copy(demo_corpus, tmp_path / "src")
    home = tmp_path / "h"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(home, source)
    return home, source.chat_db


def _no_models_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every model this process would build fails the test: the run must happen elsewhere."""
    import casper.backends.factory as factory

    built: list[str] = []

    def refuse(kind: str):  # noqa: ANN202
        def make(cfg):  # noqa: ANN001, ANN202
            built.append(kind)
            raise AssertionError(f"{kind} built in the command's own process")

        return make

    monkeypatch.setattr(factory, "make_embedder", refuse("embedder"))
    monkeypatch.setattr(factory, "make_reranker", refuse("reranker"))
    return built


def test_casper_index_hands_the_run_to_the_running_service(
    live: tuple[Path, Path],
    services,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    home, chat_db = live
    proc = services.start(home, "--no-auto-index")  # the manual run does the work
    append_messages(chat_db, 1, seed=41)
    built = _no_models_here(monkeypatch)
    monkeypatch.setenv("CASPER_SERVICE", "1")
    result = runner.invoke(app, ["index", "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["messages_new"] == 1 and doc["ran_in"] == {"pid": proc.pid}
    assert doc["vectors_done"] == doc["vectors_total"] and built == []
    append_messages(chat_db, 2, seed=42)
    shown = runner.invoke(app, ["index", "--home", str(home)])
    assert shown.exit_code == 0, shown.output
    summary = shown.stderr.splitlines()
    assert summary[-2].startswith("indexed 2 new messages ("), shown.stderr
    assert summary[-1].endswith(f"· in the casper service (pid {proc.pid})"), shown.stderr


def test_casper_index_runs_itself_without_a_service_or_with_rebuild(
    live: tuple[Path, Path],
    services,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    from tests.helpers import use_fake_search_models

    home, chat_db = live
    use_fake_search_models(monkeypatch)
    monkeypatch.setenv("CASPER_SERVICE", "1")
    append_messages(chat_db, 1, seed=43)
    alone = runner.invoke(app, ["index", "--home", str(home), "--json"])  # none runs: no start
    assert alone.exit_code == 0, alone.output
    assert "ran_in" not in json.loads(alone.stdout) and not client.running(home)
    services.start(home, "--no-auto-index")
    rebuilt = runner.invoke(app, ["index", "--home", str(home), "--rebuild", "--json"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "ran_in" not in json.loads(rebuilt.stdout)


# `casper ARGS...` in a child interpreter with the hash embedder; it reports whether the chat
# model's libraries were imported
CHILD = """
import json, sys
import casper.backends.factory as factory
from tests.fakes_search import HashEmbedder
factory.make_embedder = lambda cfg: HashEmbedder(64)
from casper.cli import app
sys.argv = ["casper", *json.loads(sys.argv[1])]
try:
    app()
except SystemExit:
    pass
print("LOADED=" + json.dumps([m for m in ("mlx", "mlx_lm") if m in sys.modules]), file=sys.stderr)
"""


def test_a_chat_model_that_is_not_downloaded_is_never_imported(
    live: tuple[Path, Path], tmp_path: Path
) -> None:
    home, _ = live
    env = child_env(HF_HUB_CACHE=str(tmp_path / "empty-hub"), HF_HUB_OFFLINE="1")
    done = run_child(CHILD, ["ask", "what did Priya say about the dentist?", "--home",
                             str(home), "--json"], env)  # fmt: skip
    loaded = [x for x in done.stderr.splitlines() if x.startswith("LOADED=")]
    assert loaded and json.loads(loaded[-1][len("LOADED=") :]) == [], done.stderr
    data = json.loads(done.stdout)
    assert data["guards"] == [] and data["notices"] == ["model_unavailable"] and data["citations"]
    check = runner.invoke(app, ["doctor", "--home", str(home), "--json"])
    model = next(c for c in json.loads(check.stdout)["checks"] if c["name"] == "language model")
    assert model["status"] == "warn" and "not in the local model cache" in model["detail"]


def test_the_service_gives_freed_memory_back_after_a_run_and_when_idle(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """After an auto-index run (its reads and writes are freed) and once idle, the service
    returns free pages (once per quiet spell); and it starts with glibc held to two arenas."""
    import casper.service.autoindex as autoindex
    import casper.service.server as server
    from casper.service.client import service_env

    assert service_env()["MALLOC_ARENA_MAX"] == os.environ.get("MALLOC_ARENA_MAX", "2")
    released: list[str] = []
    monkeypatch.setattr(autoindex, "release", lambda **kw: released.append("run"))
    monkeypatch.setattr(server, "release", lambda **kw: released.append("idle"))
    monkeypatch.setattr(server, "RELEASE_IDLE_S", 0.05)
    home = tmp_path / "h"
    home.mkdir()
    svc = server.Service(home, idle_s=60.0)
    auto = autoindex.AutoIndexer(svc, home)
    auto._run(svc.cfg)  # nothing indexed yet: a skipped run, still one that read chat.db
    assert released == ["run"]
    watcher = threading.Thread(target=svc.watch_idle, daemon=True)
    watcher.start()
    deadline = time.monotonic() + 10
    while "idle" not in released and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    svc.stopping.set()
    watcher.join(10)
    assert released.count("idle") == 1  # once per quiet spell, not at every check
    with svc.busy("search"):
        pass  # a request: the next quiet spell releases again
    deadline = time.monotonic() + 10
    svc.stopping.clear()
    watcher = threading.Thread(target=svc.watch_idle, daemon=True)
    watcher.start()
    while released.count("idle") < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    svc.stopping.set()
    watcher.join(10)
    assert released.count("idle") == 2
