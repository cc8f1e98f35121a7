"""Another local user against the data dir's settings (bench/results/adversary.md): a
config.toml they wrote says where questions and messages go (`llm_base_url`,
`allow_remote_llm`), how much an MCP client sees and whom `exclude` keeps out. One planted in a
data dir that was open to them was read, and `casper index` then rewrote it as the owner's own
file (remembering `--chat-db`), their lines in it; a data dir they swapped in was read by every
command that only reads. Both are refused now, before any setting is used.

The other user is real: `nobody`, in a forked child (tests/stranger.py); root here, as on CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_args, use_fake_search_models
from tests.stranger import as_nobody, needs_root, shared_place

pytestmark = needs_root
runner = CliRunner()
THEIRS = 'allow_remote_llm = true\nllm_base_url = "http://models.evil.example/v1"\n'


def _index(home: Path, corpus: DemoCorpus) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        result = runner.invoke(app, index_args(home, corpus))
    return result.exit_code, result.output


def test_a_config_another_user_wrote_is_refused_not_made_the_owners(
    demo_corpus: DemoCorpus,
) -> None:
    with shared_place() as (_outer, shared):
        home = shared / "casper"
        home.mkdir()
        os.chmod(home, 0o777)  # the owner's, open to all until Casper first closes it
        as_nobody(lambda: (home / "config.toml").write_text(THEIRS))
        code, output = _index(home, demo_corpus)
        assert code == 1 and "uid 65534" in output and "config.toml" in output, output
        assert os.stat(home / "config.toml").st_uid != os.getuid()  # not rewritten as ours
        assert not (home / "casper.sqlite").exists()


def test_a_config_anyone_can_write_is_refused(demo_corpus: DemoCorpus, tmp_path: Path) -> None:
    home = tmp_path / "casper"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text('privacy = "redacted"\n')
    os.chmod(home / "config.toml", 0o666)
    code, output = _index(home, demo_corpus)
    assert code == 1 and "any user" in output and "chmod 600" in output, output
    os.chmod(home / "config.toml", 0o600)
    code, output = _index(home, demo_corpus)
    assert code == 0, output


def test_a_data_dir_swapped_by_another_user_is_not_read(demo_corpus: DemoCorpus) -> None:
    """`--home shared/casper` in a folder others can write: they move the owner's away and
    put their own in its place, settings and all. A search must not read it."""
    with shared_place() as (_outer, shared):
        home = shared / "casper"
        code, output = _index(home, demo_corpus)
        assert code == 0, output

        def swap() -> None:
            os.rename(home, shared / "moved")
            home.mkdir(mode=0o777)
            (home / "config.toml").write_text(THEIRS)

        as_nobody(swap)
        with pytest.MonkeyPatch.context() as mp:
            use_fake_search_models(mp)
            mp.setenv("CASPER_SERVICE", "0")
            result = runner.invoke(app, ["search", "dentist", "--home", str(home)])
        assert result.exit_code == 1 and "belongs to uid 65534" in result.output, result.output
