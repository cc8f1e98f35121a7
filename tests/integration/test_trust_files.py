"""Files a person asks Casper to write (`export`, `review`, `stats --png`) in a folder another
local user can write to: that user can't steer them — no link planted at a name the writer will
use makes it write into another file, no file made in advance gets the owner's data or keeps
it readable, a link at the target is refused (and with --force replaced, never written
through), and `--png` never writes over a file without --force.

The other user is real: `nobody`, in a forked child (tests/stranger.py); root here, as on CI.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_home, use_fake_search_models
from tests.stranger import Holder, as_nobody, needs_root, shared_place

pytestmark = needs_root
runner = CliRunner()
PRECIOUS = b"the owner's own file, which no export may touch\n"


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("trust_files") / "home"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(place, demo_corpus)
    return place


@pytest.fixture
def place() -> Iterator[tuple[Path, Path, Path]]:
    """(outer, shared, victim): a folder both users write, and a file of the owner's (0644,
    so a chmod shows) that the stranger can name but not read or write."""
    with shared_place() as (outer, shared):
        victim = outer / "victim.txt"
        victim.write_bytes(PRECIOUS)
        os.chmod(victim, 0o644)
        yield outer, shared, victim


def invoke(home: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "--home", str(home)])
    return result.exit_code, result.output


def plant_links(where: Path, names: list[str], target: Path) -> None:
    def plant() -> None:
        for name in names:
            os.symlink(target, where / name)

    as_nobody(plant)


def assert_untouched(victim: Path) -> None:
    assert victim.read_bytes() == PRECIOUS
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def assert_owners_private_file(path: Path) -> None:
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode), "not a regular file"
    assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o600


def temp_names(name: str) -> list[str]:
    """The names a writer that uses `.NAME.PID.tmp` picks in this process (and around it)."""
    return [f".{name}.{pid}.tmp" for pid in range(os.getpid() - 2, os.getpid() + 3)]


def test_links_at_the_temp_names_do_not_steer_an_export(
    home: Path, place: tuple[Path, Path, Path]
) -> None:
    _outer, shared, victim = place
    out = shared / "out.csv"
    plant_links(shared, temp_names(out.name), victim)
    code, output = invoke(home, "export", "--person", "Sam", "--format", "csv", "-o", str(out))
    assert code == 0, output
    assert_untouched(victim)
    assert_owners_private_file(out)
    assert out.read_text(encoding="utf-8").startswith("id,")


def test_links_at_the_temp_names_do_not_steer_a_review(
    home: Path, place: tuple[Path, Path, Path]
) -> None:
    _outer, shared, victim = place
    out = shared / "review.html"
    plant_links(shared, temp_names(out.name), victim)
    code, output = invoke(home, "review", "2023", "-o", str(out))
    assert code == 0, output
    assert_untouched(victim)
    assert_owners_private_file(out)


def test_a_temp_file_made_in_advance_gets_nothing(
    home: Path, place: tuple[Path, Path, Path]
) -> None:
    _outer, shared, _victim = place
    out = shared / "sam.jsonl"
    holder = Holder(shared / f".{out.name}.{os.getpid()}.tmp")  # kept open by the stranger
    code, output = invoke(home, "export", "--person", "Sam", "-o", str(out))
    seen = holder.seen()
    assert code == 0, output
    assert seen == b"", f"the stranger read {len(seen)} bytes of the export"
    assert_owners_private_file(out)
    assert os.lstat(out).st_ino != holder.inode
    assert as_nobody(lambda: os.access(out, os.R_OK)) is False


def test_a_link_at_the_target_is_refused_without_force(
    home: Path, place: tuple[Path, Path, Path]
) -> None:
    outer, shared, victim = place
    for target in (outer / "not-yet-there.csv", victim):  # dangling, and to a file
        out = shared / f"to-{target.stem}.csv"
        plant_links(shared, [out.name], target)
        code, output = invoke(home, "export", "--person", "Sam", "-o", str(out))
        assert code == 1 and "link" in output and "--force" in output, output
        assert os.readlink(out) == str(target)  # left as it was
        assert not (outer / "not-yet-there.csv").exists()
        assert_untouched(victim)


def test_force_replaces_a_link_at_the_target_never_writes_through_it(
    home: Path, place: tuple[Path, Path, Path]
) -> None:
    _outer, shared, victim = place
    out = shared / "forced.jsonl"
    plant_links(shared, [out.name], victim)
    code, output = invoke(home, "export", "--person", "Sam", "-o", str(out), "--force")
    assert code == 0, output
    assert_untouched(victim)
    assert_owners_private_file(out)


@pytest.mark.slow  # matplotlib builds its font list in the home once: ~5 s
def test_png_follows_the_rules_of_export(home: Path, place: tuple[Path, Path, Path]) -> None:
    _outer, shared, victim = place
    linked = shared / "linked.png"
    plant_links(shared, [linked.name], victim)
    code, output = invoke(home, "stats", "Sam", "--png", str(linked))
    assert code == 1 and "--force" in output, output
    assert_untouched(victim)
    assert os.readlink(linked) == str(victim)

    existing = shared / "mine.png"
    existing.write_bytes(b"a picture I keep")
    code, output = invoke(home, "stats", "Sam", "--png", str(existing))
    assert code == 1 and "already exists" in output and "--force" in output, output
    assert existing.read_bytes() == b"a picture I keep"

    code, output = invoke(home, "stats", "Sam", "--png", str(linked), "--force")
    assert code == 0, output
    assert_untouched(victim)
    assert_owners_private_file(linked)
    assert linked.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    plant_links(shared, temp_names("fresh.png"), victim)
    fresh = shared / "fresh.png"
    code, output = invoke(home, "stats", "Sam", "--png", str(fresh))
    assert code == 0, output
    assert_untouched(victim)
    assert_owners_private_file(fresh)


def test_eval_run_files_are_not_steered(place: tuple[Path, Path, Path]) -> None:
    """`casper eval --out DIR` names its files by the clock (`<DIR>/YYYYmmdd-HHMMSS.json`,
    `.md`, `.png`, a free `.json` name decides): links planted at the next few seconds' `.md`
    and `.png` names write nothing through."""
    from datetime import datetime, timedelta

    from eval.report import write_run

    _outer, shared, victim = place
    now = datetime.now()
    stems = [(now + timedelta(seconds=s)).strftime("%Y%m%d-%H%M%S") for s in range(-1, 30)]
    plant_links(shared, [f"{stem}{ext}" for stem in stems for ext in (".md", ".png")],
                victim)  # fmt: skip
    doc = {"dataset": "synthetic", "scored_questions": 1, "runs": [], "ks": [1, 5],
           "created": "now", "questions": 1}  # fmt: skip
    paths = write_run(doc, shared)
    assert_untouched(victim)
    for path in paths.values():
        assert_owners_private_file(path)


def test_a_link_another_user_made_on_the_way_is_not_followed(
    home: Path, place: tuple[Path, Path, Path]
) -> None:
    """`-o shared/notes/sam.txt` where the stranger made `shared/notes` a link to a folder of
    the owner's (or the system's): the file would land where they chose. Refused, nothing
    written there; the owner's own links are followed as before."""
    outer, shared, _victim = place
    private = outer / "private"
    private.mkdir(mode=0o700)
    plant_links(shared, ["notes"], private)
    code, output = invoke(home, "export", "--person", "Sam", "-o", str(shared / "notes" / "sam"))
    assert code == 1 and "uid 65534" in output, output
    assert list(private.iterdir()) == []

    mine = shared / "mine"
    os.symlink(private, mine)  # a link of the owner's: followed
    code, output = invoke(home, "export", "--person", "Sam", "-o", str(mine / "sam.jsonl"))
    assert code == 0, output
    assert_owners_private_file(private / "sam.jsonl")


@pytest.mark.parametrize("made", ["folder", "link"])
def test_a_data_dir_another_user_made_is_refused(
    demo_corpus: DemoCorpus, place: tuple[Path, Path, Path], made: str
) -> None:
    """`--home shared/casper` where the stranger made `shared/casper` first (or a link to a
    folder of theirs): files Casper writes there could be replaced or linked whatever their
    mode, so nothing is written there; the owner is told whose folder it is."""
    from tests.helpers import index_args

    _outer, shared, _victim = place
    data = shared / "casper"

    def make() -> None:
        if made == "link":
            (shared / "theirs").mkdir(mode=0o777)
            os.symlink(shared / "theirs", data)
        else:
            data.mkdir(mode=0o777)

    as_nobody(make)
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        result = runner.invoke(app, index_args(data, demo_corpus))
    assert result.exit_code == 1 and "uid 65534" in result.output, result.output
    inside = shared / "theirs" if made == "link" else data
    assert list(inside.iterdir()) == []
