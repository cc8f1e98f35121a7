"""`kill -9` of `casper index` at the moments a user can hit: a killed rebuild never
leaves a refusal (the next search serves the last good index, the next plain `casper index`
finishes the rebuild), and paths given on a first run are kept from its start, so a plain
`casper index` after a kill reads the same chat.db. Each run is a child process killed by
itself at a chosen step, so the kill lands at the same place on a fast or a slow machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ingest.synthetic.demo import build_tiny_corpus
from tests.damage import SEARCH, STATS, build_home, run
from tests.helpers import child_env, index_args

pytestmark = pytest.mark.slow  # about ten child processes that import LanceDB

# `casper` with the hash embedder that kills itself (SIGKILL, as `kill -9`) when the run reaches
# argv[2]: reading chat.db into the store, writing the chunks, or embedding them
KILLED_AT = """
import json, os, signal, sys
import casper.backends.factory as factory
from tests.fakes_search import HashEmbedder
factory.make_embedder = lambda cfg: HashEmbedder(64)

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

point = sys.argv[2]
if point == "reading":
    from casper.store.db import Store
    Store.put_messages = die
elif point == "chunking":
    from casper.indexer import chunk_update
    chunk_update.update_lexical = die
elif point == "embedding":
    from casper.indexer import chunk_update
    chunk_update.ensure_vectors = die
from casper.cli import app
sys.argv = ["casper", *json.loads(sys.argv[1])]
app()
"""
SIGKILLED = -9


def run_killed(args: list[str], point: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AT, json.dumps(args), point],
        capture_output=True, text=True, env=child_env(), timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == SIGKILLED, f"not killed at {point}: {done.stderr[-800:]}"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("killed-template"))


@pytest.mark.parametrize("point", ["reading", "chunking", "embedding"])
def test_a_killed_rebuild_leaves_search_serving_and_the_next_run_finishes_it(
    point: str, indexed: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(indexed, home)
    before = {args: run(home, *args) for args in (SEARCH, STATS)}
    assert all(step.code == 0 for step in before.values())

    run_killed(["index", "--rebuild", "--home", str(home)], point)
    for args, was in before.items():  # the last good index serves, as it did
        now = run(home, *args)
        assert now.code == 0 and now.stdout == was.stdout, now.output

    nxt = run(home, "index", "--json")  # a plain run, no --rebuild: it finishes the job
    assert nxt.code == 0 and not nxt.unexpected, nxt.output
    report = json.loads(nxt.stdout)
    if point != "embedding":  # killed before the rebuilt chunks were published
        assert report["noop"] is False, "the killed rebuild was forgotten"
    assert report["vectors_done"] == report["vectors_total"] > 0
    assert json.loads(run(home, "index", "--json").stdout)["noop"] is True  # and done once
    for args, was in before.items():
        now = run(home, *args)
        assert now.code == 0 and now.stdout == was.stdout, now.output
    doctor = run(home, "doctor")
    assert doctor.code == 0, doctor.output


def test_paths_given_to_a_killed_first_run_are_kept(tmp_path: Path) -> None:
    corpus = build_tiny_corpus(tmp_path / "src")
    home = tmp_path / "home"
    run_killed(index_args(home, corpus), "reading")

    kept = tomllib.loads((home / "config.toml").read_text())
    assert Path(kept["chat_db"]) == Path(corpus.chat_db).resolve()
    assert Path(kept["contacts"]) == Path(corpus.contacts).resolve()
    resumed = run(home, "index", "--json")  # no paths: the default chat.db does not exist here
    assert resumed.code == 0, resumed.output
    found = run(home, *SEARCH)
    assert found.code == 0 and '"hits": [' in found.stdout and '"hits": []' not in found.stdout


# `casper` with the hash embedder whose files may not grow past argv[2] bytes: a write past it
# fails with EFBIG (SIGXFSZ ignored), as a write to a full disk fails with ENOSPC
SIZE_LIMITED = """
import json, resource, signal, sys
import casper.backends.factory as factory
from tests.fakes_search import HashEmbedder
factory.make_embedder = lambda cfg: HashEmbedder(64)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
from casper.cli import app
sys.argv = ["casper", *json.loads(sys.argv[1])]
app()
"""


@pytest.mark.parametrize("limit", [16_000, 50_000])
def test_a_full_disk_during_index_is_one_error_and_the_previous_index_serves(
    limit: int, indexed: Path, tmp_path: Path
) -> None:
    # what the index answered, asked of a copy: a search here would leave SQLite's -shm file
    # behind, and growing that file is one of the writes that fails (as SQLITE_IOERR_SHMSIZE)
    shutil.copytree(indexed, tmp_path / "asked")
    before = {args: run(tmp_path / "asked", *args) for args in (SEARCH, STATS)}
    home = tmp_path / "home"
    shutil.copytree(indexed, home)

    done = subprocess.run(
        [sys.executable, "-c", SIZE_LIMITED, json.dumps(["index", "--rebuild", "--home",
         str(home)]), str(limit)],
        capture_output=True, text=True, env=child_env(), timeout=300, check=False,
    )  # fmt: skip
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr
    assert "size limit" in errors[0] and "hint: raise the limit" in done.stderr
    for args, was in before.items():  # the previous store and index keep serving
        now = run(home, *args)
        assert now.code == 0 and now.stdout == was.stdout, now.output

    nxt = run(home, "index", "--json")  # with room again, the next run completes
    assert nxt.code == 0, nxt.output
    for args, was in before.items():
        now = run(home, *args)
        assert now.code == 0 and now.stdout == was.stdout, now.output
    assert run(home, "doctor").code == 0
