"""Every command's `--json` on the demo matches its TypedDict (casper/app/documents.py): the
keys the type names, no others, and each value of its type, as printed."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from casper.app import documents
from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.document_types import mismatches
from tests.helpers import index_args, use_fake_search_models

runner = CliRunner()


@pytest.fixture(scope="module")
def printed(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each command's `--json` document on the demo (in this process, the fake models)."""
    home = tmp_path_factory.mktemp("json") / "home"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("CASPER_SERVICE", "0")
        use_fake_search_models(monkeypatch)

        def run(*args: str, ok: tuple[int, ...] = (0,)) -> Any:
            result = runner.invoke(app, [*args, "--home", str(home), "--json"])
            assert result.exit_code in ok, result.output
            return json.loads(result.stdout)

        docs = {"index": run(*index_args(home, demo_corpus))}
        docs["search"] = run("search", "dentist")
        docs["search_person_since"] = run("search", "dinner with Priya", "--since", "2024-01-01")
        docs["ask"] = run("ask", "--no-llm", "when did Sam and I plan Thanksgiving?")
        docs["ask_stats"] = run("ask", "--no-llm", "who do I text the most?")
        docs["contacts"] = run("contacts")
        docs["stats"] = run("stats", "Priya")
        docs["stats_range"] = run("stats", "Sam", "--since", "2023-01-01", "--until", "2023-06-30")
        docs["stats_chat"] = run("stats", "Climbing crew", "--by", "week")
        docs["stats_me"] = run("stats", "me", "--since", "2024-01-01")
        docs["review"] = run("review", "2023")
        docs["show"] = run("show", str(docs["search"]["hits"][0]["messages"][0]["rowid"]))
        docs["chats"] = run("chats")
        docs["doctor"] = run("doctor", ok=(0, 1))  # no model cached here: it may fail a check
    return docs


TYPES = {
    "index": documents.IndexDoc,
    "search": documents.SearchDoc,
    "search_person_since": documents.SearchDoc,
    "ask": documents.AskDoc,
    "ask_stats": documents.AskDoc,
    "contacts": list[documents.ContactJson],
    "stats": documents.StatsDoc,
    "stats_range": documents.StatsDoc,
    "stats_chat": documents.StatsDoc,
    "stats_me": documents.StatsDoc,
    "review": documents.ReviewDoc,
    "show": documents.ShowDoc,
    "chats": list[documents.ChatJson],
    "doctor": documents.DoctorReport,
}


@pytest.mark.parametrize("name", TYPES)
def test_json_document_matches_its_type(printed: dict[str, Any], name: str) -> None:
    doc = printed[name]
    assert doc, name  # an empty list would match any element type
    assert mismatches(doc, TYPES[name]) == []


def test_the_documents_hold_the_optional_keys_too(printed: dict[str, Any]) -> None:
    """The runs above reach the keys only some documents have, so their types are checked."""
    assert "days" in printed["search_person_since"]["filters"]
    assert "people" in printed["search_person_since"]["understood"]
    assert any("why_not_reranked" in printed[name] for name in ("ask", "ask_stats")), printed["ask"]
    assert printed["stats_range"]["range"]["since"] == "2023-01-01"
    assert printed["doctor"]["counts"]


def test_a_wrong_document_is_caught(printed: dict[str, Any]) -> None:
    """The check can fail: a value of another type, a missing key, an unknown key, a wrong
    element deep inside, and an optional key of the wrong type are each named."""
    stats = json.loads(json.dumps(printed["stats"]))
    stats["sent"] = str(stats["sent"])
    del stats["range"]
    stats["person"]["nickname"] = "Pri"
    stats["initiations"]["me"] = True  # a bool is not an int
    found = mismatches(stats, documents.StatsDoc)
    assert "$.sent: '" + stats["sent"] + "' is not int" in found
    assert "$: StatsDoc key 'range' is missing" in found
    assert "$.person: 'nickname' is not a key of PersonJson" in found
    assert "$.initiations['me']: True is not int" in found
    assert len(found) == 4

    search = json.loads(json.dumps(printed["search"]))
    search["hits"][0]["messages"][0]["rowid"] = None
    search["why_not_reranked"] = 3
    assert sorted(mismatches(search, documents.SearchDoc)) == [
        "$.hits[0].messages[0].rowid: None is not int",
        "$.why_not_reranked: 3 is not str",
    ]


def test_the_check_reads_optional_keys_as_optional(printed: dict[str, Any]) -> None:
    """A NotRequired key may be absent (Python 3.11 marks every key required when annotations
    are strings; the check reads the wrappers itself)."""
    show: Any = dict(printed["show"])
    show.pop("reaction", None)
    assert mismatches(show, documents.ShowDoc) == []
    show["reaction"] = {"ref": "9", "guid": "g", "reaction": "loved", "sender": "Sam"}
    assert mismatches(show, documents.ShowDoc) == ["$.reaction: ReactionAsked key 'to' is missing"]


def test_every_command_with_json_is_checked() -> None:
    """A new `--json` command needs a type and a run here (`eval` and `serve --status` are not
    typed yet)."""
    with_json = set()
    for info in app.registered_commands:
        assert info.callback is not None
        if "json" in inspect.signature(info.callback).parameters:  # through @guarded's wraps
            with_json.add(info.name or info.callback.__name__)
    checked = {name.split("_")[0] for name in TYPES}
    assert with_json - checked == {"eval", "serve"}, with_json - checked


def test_the_check_reads_containers_and_unions() -> None:
    assert mismatches({"a": 1}, dict[str, str]) == ["$['a']: 1 is not str"]
    assert mismatches([1, "x"], list[int]) == ["$[1]: 'x' is not int"]
    assert mismatches(["x", 2], tuple[str, int]) == []
    assert mismatches(["x"], tuple[str, int]) == ["$: ['x'] is not a 2-item list"]
    assert mismatches(2, float) == [] and mismatches(True, float) != []
    assert mismatches(None, str | None) == [] and mismatches(1, str | None) != []
