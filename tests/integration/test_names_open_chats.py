"""One reading of a name, everywhere a chat or a person is named (`stats`, `search --chat`,
`ask --chat`, `export --chat`): the exact label `casper chats` prints opens that chat — a group
named after its members too, even when one of them is a bare phone number — and a name that
fits several lists every candidate, in the same words from every command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_home, use_fake_search_models

runner = CliRunner()


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("names_open_chats") / "home"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(place, demo_corpus)
    return place


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_search_models(monkeypatch)


def invoke(home: Path, *args: str):  # noqa: ANN201 - click's Result
    return runner.invoke(app, [*args, "--home", str(home)])


def ok(home: Path, *args: str) -> dict:
    result = invoke(home, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def labels(home: Path) -> dict[str, list[int]]:
    """Each label `casper chats` prints → the ids of the chats that carry it."""
    out: dict[str, list[int]] = {}
    for chat in ok(home, "chats", "--json"):
        out.setdefault(chat["name"], []).append(chat["id"])
    return out


def opened_by(home: Path, label: str, tmp_path: Path) -> dict[str, object]:
    """The chat each command opens for `--chat LABEL` (and `stats LABEL` for a group)."""
    found: dict[str, object] = {
        "stats --chat": ok(home, "stats", "--chat", label, "--json")["scope"]["id"],
        "search --chat": ok(home, "search", "dinner", "--chat", label, "--json")["filters"]["chat"],
        "ask --chat": ok(home, "ask", "dinner?", "--chat", label, "--no-llm", "--json")["filters"][
            "chat"
        ],
    }
    out = tmp_path / f"export-{abs(hash(label))}.jsonl"
    result = invoke(home, "export", "--chat", label, "-o", str(out))
    assert result.exit_code == 0, result.output
    chats = {json.loads(line)["chat_id"] for line in out.read_text().splitlines()}
    found["export --chat"] = chats.pop() if len(chats) == 1 else sorted(chats)
    return found


def test_a_group_label_with_a_phone_number_opens_the_group(home: Path) -> None:
    group = next(name for name, ids in labels(home).items() if name.startswith("+") and "&" in name)
    ids = labels(home)[group]
    doc = ok(home, "stats", group, "--json")
    assert doc["scope"]["kind"] == "chat" and doc["scope"]["id"] == str(ids[0])
    assert "person" not in doc  # not the contact whose number starts the label


def test_a_label_that_is_part_of_another_still_opens_its_own_chat(
    home: Path, tmp_path: Path, fake_models: None
) -> None:
    """ "Alex Chen" and "+13125550177" are 1:1 chats and also words of the group's label."""
    every = labels(home)
    group = next(name for name in every if "&" in name)
    inside = [
        name for name, ids in every.items() if len(ids) == 1 and name in group and name != group
    ]
    assert inside  # the demo has them: what this test is about
    for label in inside:
        want = every[label][0]
        found = opened_by(home, label, tmp_path)
        assert {str(v) for v in found.values()} == {str(want)}, (label, found)


def test_every_unique_label_opens_its_chat_everywhere(
    home: Path, tmp_path: Path, fake_models: None
) -> None:
    for label, ids in labels(home).items():
        if len(ids) != 1 or ids == [0]:
            continue
        found = opened_by(home, label, tmp_path)
        assert {str(v) for v in found.values()} == {str(ids[0])}, (label, found)


def test_a_shared_label_lists_the_candidates_in_the_same_words_everywhere(
    home: Path, tmp_path: Path, fake_models: None
) -> None:
    label, ids = next((n, i) for n, i in labels(home).items() if len(i) > 1)  # "Sam Rivera" ×2
    said = {}
    for args in (
        ["stats", "--chat", label],
        ["search", "dinner", "--chat", label],
        ["ask", "dinner?", "--chat", label, "--no-llm"],
        ["export", "--chat", label, "-o", str(tmp_path / "never.jsonl")],
    ):
        result = invoke(home, *args)
        assert result.exit_code == 1, result.output
        error = next(line for line in result.output.splitlines() if line.startswith("error:"))
        for chat_id in ids:
            assert str(chat_id) in error
        said[args[0]] = error
    assert len(set(said.values())) == 1, said  # one resolution: one message
    assert not (tmp_path / "never.jsonl").exists()


def test_a_person_option_is_not_taken_by_a_group_label(home: Path, fake_models: None) -> None:
    """The group's label holds a contact's number: `--person LABEL` is no reason to pick them."""
    group, ids = next((n, i) for n, i in labels(home).items() if n.startswith("+") and "&" in n)
    for args in (["search", "dinner", "--person", group], ["export", "--person", group]):
        result = invoke(home, *args)
        assert result.exit_code == 1, result.output
        assert f"--chat {ids[0]}" in result.output  # what they meant, said
