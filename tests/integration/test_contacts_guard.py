"""A missing AddressBook never wipes names, and the paths given to `index`
are remembered in config.toml for later runs and `doctor`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from casper.store.db import Store

runner = CliRunner()


@pytest.fixture
def home(demo_home: Path) -> Path:
    """A home indexed once with explicit --chat-db and --contacts (tests/integration/conftest)."""
    return demo_home


def people(home: Path) -> dict[str, str]:
    store = Store.open(home / "casper.sqlite")
    try:
        return {p.id: p.name for p in store.people()}
    finally:
        store.close()


def test_paths_are_remembered_for_a_plain_index_and_doctor(home: Path, demo_corpus) -> None:  # noqa: ANN001
    saved = tomllib.loads((home / "config.toml").read_text())
    assert saved == {
        "chat_db": str(demo_corpus.chat_db.resolve()),
        "contacts": str(demo_corpus.contacts.resolve()),
    }
    assert (home / "config.toml").stat().st_mode & 0o777 == 0o600
    before = people(home)
    plain = runner.invoke(app, ["index", "--home", str(home), "--json"])
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.stdout)["noop"] is True  # same history, same AddressBook
    assert people(home) == before
    doctor = json.loads(runner.invoke(app, ["doctor", "--home", str(home), "--json"]).stdout)
    status = {c["name"]: c["status"] for c in doctor["checks"]}
    assert status["chat.db"] == "ok" and status["contacts"] == "ok"


def test_an_unreadable_addressbook_stops_with_a_hint(home: Path, tmp_path: Path) -> None:
    before = people(home)
    named = sum(1 for pid, name in before.items() if not name.startswith("+"))
    assert named > 0
    typo = tmp_path / "AdressBook"
    result = runner.invoke(app, ["index", "--home", str(home), "--contacts", str(typo)])
    assert result.exit_code == 1
    assert "error:" in result.output and "hint:" in result.output
    assert "--no-contacts" in result.output and str(typo) in result.output
    assert people(home) == before  # names and ids untouched
    # the failed path is not remembered
    saved = tomllib.loads((home / "config.toml").read_text())
    assert saved["contacts"] != str(typo.resolve())
    doctor = runner.invoke(
        app, ["doctor", "--home", str(home), "--json"], env={"CASPER_CONTACTS": str(typo)}
    )
    contacts = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "contacts")
    assert contacts["status"] == "fail" and "names" in contacts["detail"]


def test_no_contacts_indexes_without_names_on_purpose(home: Path, demo_corpus) -> None:  # noqa: ANN001
    result = runner.invoke(app, ["index", "--home", str(home), "--no-contacts", "--json"])
    assert result.exit_code == 0, result.output
    names = set(people(home).values())
    assert "Sam Rivera" not in names and "+14155550132" in names
    # --no-contacts is for this run: the AddressBook path stays remembered
    saved = tomllib.loads((home / "config.toml").read_text())
    assert saved["contacts"] == str(demo_corpus.contacts.resolve())
