"""A damaged data dir, the quick cases outside the slow corruption matrix (test_damage_matrix.py):
`doctor --json` fails too, and names the file; config.toml of random bytes is named with its
line, never "unexpected"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.damage import SEARCH, build_home, damage, run


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("damaged-home"))


@pytest.fixture
def home(indexed: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "home"
    shutil.copytree(indexed, dest)
    return dest


def test_doctor_json_exits_1_and_names_a_damaged_index_manifest(home: Path) -> None:
    damage(home / "index.lance" / "manifest.json", "random")
    done = run(home, "doctor", "--json")
    assert done.code == 1, done.output
    failed = [c for c in json.loads(done.stdout)["checks"] if c["status"] == "fail"]
    assert any("manifest.json" in str(c["detail"]) for c in failed), failed
    assert any("casper index --rebuild" in (c.get("hint") or "") for c in failed), failed


def test_a_config_toml_of_random_bytes_is_named_with_its_line(home: Path) -> None:
    (home / "config.toml").write_bytes(b"\xbd\x01\xfe garbage")
    for args in (SEARCH, ("index", "--rebuild")):
        done = run(home, *args)
        assert done.code == 1 and "unexpected" not in done.output, done.output
        assert "config.toml" in done.output and "line 1" in done.output, done.output
    assert (home / "config.toml").read_bytes().startswith(b"\xbd")  # the user's: never moved
