"""`casper review` and `casper export` on the demo: the review's figures equal `stats`, its HTML
needs nothing outside itself, `--share` shows no text and no names; an export holds exactly the
messages `stats` counts, private, stable, never over a file without --force."""

from __future__ import annotations

import csv
import io
import json
import re
import stat
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_home, use_fake_search_models

runner = CliRunner()


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("review_export") / "home"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(place, demo_corpus)
    return place


def run(home: Path, *args: str) -> str:
    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result.stdout


def stats(home: Path, *args: str) -> dict:
    return json.loads(run(home, "stats", *args, "--json"))


YEAR = ("--since", "2023-01-01", "--until", "2023-12-31")


class Outside(HTMLParser):
    """Everything in an HTML file that would reach outside it."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.tags: Counter[str] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        if tag in {"script", "link", "img", "iframe", "object", "embed", "audio", "video"}:
            self.found.append(tag)
        for name, value in attrs:
            if name in {"src", "href", "srcset", "action", "xlink:href", "poster", "data"}:
                self.found.append(f"{tag} {name}={value}")
            if name.startswith("on"):
                self.found.append(f"{tag} {name}")

    def handle_data(self, data: str) -> None:
        if "@import" in data or "url(" in data:
            self.found.append(data[:60])


def parsed(path: Path) -> Outside:
    parser = Outside()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_review_agrees_with_stats_and_stands_alone(home: Path, tmp_path: Path) -> None:
    doc = json.loads(run(home, "review", "2023", "--json"))
    owner = stats(home, "me", *YEAR)
    assert (doc["this"]["sent"], doc["this"]["received"]) == (owner["sent"], owner["received"])
    assert doc["this"]["active_days"] == owner["active_days"]
    assert doc["this"]["median_reply_s"] == owner["median_reply_s"]
    before = stats(home, "me", "--since", "2022-01-01", "--until", "2022-12-31")
    assert doc["before"]["sent"] + doc["before"]["received"] == before["sent"] + before["received"]
    top = doc["top_people"][0]
    person = stats(home, top["id"], *YEAR)
    assert top["name"] == person["person"]["name"] == "Sam Rivera"
    assert top["messages"] == person["sent"] + person["received"]
    for p in doc["top_people"][1:]:
        assert p["messages"] <= top["messages"]
        one = stats(home, p["id"], *YEAR)
        assert p["messages"] == one["sent"] + one["received"]
    # the busiest day: no day of the year has more messages than it (heatmap rows sum per day)
    day = doc["busiest_day"]
    assert day["day"].startswith("2023-") and day["messages"] > 0
    that_day = stats(home, "me", "--since", day["day"], "--until", day["day"])
    assert that_day["sent"] + that_day["received"] == day["messages"]
    assert doc["first_message"]["ts"].startswith("2023-01") and doc["first_message"]["text"]

    out = tmp_path / "review.html"
    summary = run(home, "review", "2023", "-o", str(out))
    assert f"1. Sam Rivera {top['messages']:,}" in summary
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    found = parsed(out)
    assert found.found == [] and found.tags["svg"] == 2  # months and heatmap, inline
    html = out.read_text(encoding="utf-8")
    assert f"{owner['sent'] + owner['received']:,}" in html and "Sam Rivera" in html
    months = sum(p["sent"] + p["received"] for p in doc["stats"]["series"]["over_time"])
    assert months == owner["sent"] + owner["received"]
    again = runner.invoke(app, ["review", "2023", "-o", str(out), "--home", str(home)])
    assert again.exit_code == 1 and "--force" in again.output


def test_shared_review_has_no_text_and_no_names(home: Path, tmp_path: Path) -> None:
    full = json.loads(run(home, "review", "2023", "--json"))
    out = tmp_path / "shared.html"
    run(home, "review", "2023", "--share", "-o", str(out))
    html = out.read_text(encoding="utf-8")
    for name in ("Sam Rivera", "Alex Chen", "Priya", "Dana", "Mom", "Climbing"):
        assert not re.search(rf"\b{name}\b", html), name
    assert "S.R." in html and "A.C." in html
    assert full["first_message"]["text"] not in html
    assert full["last_message"]["text"] not in html
    printed = run(home, "review", "2023", "--share", "--json")
    assert not re.search(r"\bp_[0-9a-f]{6,}", printed)  # no person id: it could name a handle
    shared = json.loads(printed)
    assert shared["first_message"]["text"] is None
    assert [p["messages"] for p in shared["top_people"]] == [
        p["messages"] for p in full["top_people"]
    ]
    assert parsed(out).found == []


def test_review_follows_the_privacy_setting(home: Path, tmp_path: Path) -> None:
    """A review is made to be shown: `privacy = "aggregate"` quotes no message, `redacted`
    masks what it quotes; the figures stay the owner's own."""
    full = json.loads(run(home, "review", "2023", "--json"))
    settings = home / "config.toml"
    try:
        settings.write_text('privacy = "aggregate"\n')
        kept = json.loads(run(home, "review", "2023", "--json"))
        settings.write_text('privacy = "redacted"\n')
        masked = json.loads(run(home, "review", "2023", "--json"))
    finally:
        settings.unlink()
    assert full["first_message"]["text"]
    assert kept["first_message"]["text"] is None and kept["last_message"]["text"] is None
    assert kept["this"] == full["this"] and kept["top_people"] == full["top_people"]
    from casper.agent.redact import mask

    assert masked["first_message"]["text"] == mask(full["first_message"]["text"])


def test_export_has_the_messages_stats_counts(home: Path, tmp_path: Path) -> None:
    sam = stats(home, "Sam")
    out = tmp_path / "sam.jsonl"
    run(home, "export", "--person", "Sam", "--format", "jsonl", "-o", str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == sam["sent"] + sam["received"]
    rows = [json.loads(line) for line in lines]
    assert sum(r["sender_id"] == "me" for r in rows) == sam["sent"]
    assert {r["sender"] for r in rows if r["sender_id"] != "me"} == {"Sam Rivera"}
    assert set(rows[0]) == {"id", "guid", "chat_id", "chat", "sender_id", "sender", "time",
                            "text", "kind", "edited", "reply_to", "reactions",
                            "attachments"}  # fmt: skip
    assert all(re.search(r"[+-]\d\d:\d\d$", r["time"]) for r in rows)  # local, with offset
    assert any(r["reactions"] for r in rows) and any(r["attachments"] for r in rows)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    # stable: the same history exports byte-identical
    second = tmp_path / "again.jsonl"
    run(home, "export", "--person", "Sam", "-o", str(second))
    assert second.read_bytes() == out.read_bytes()
    refused = runner.invoke(app, ["export", "--person", "Sam", "-o", str(out), "--home", str(home)])
    assert refused.exit_code == 1 and "--force" in refused.output
    run(home, "export", "--person", "Sam", "-o", str(out), "--force", "--since", "2024-01-01")
    ranged = stats(home, "Sam", "--since", "2024-01-01")
    assert len(out.read_text().splitlines()) == ranged["sent"] + ranged["received"]


def test_export_csv_and_everything(home: Path, tmp_path: Path) -> None:
    owner = stats(home, "me")
    out = tmp_path / "all.csv"
    run(home, "export", "--format", "csv", "-o", str(out))
    table = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert len(table) == owner["sent"] + owner["received"]
    assert sum(r["sender_id"] == "me" for r in table) == owner["sent"]
    crew = stats(home, "Climbing crew")
    out = tmp_path / "crew.csv"
    run(home, "export", "--chat", crew["scope"]["id"], "--format", "csv", "-o", str(out))
    assert len(list(csv.DictReader(out.open(encoding="utf-8")))) == crew["sent"] + crew["received"]


def test_markdown_reads_as_a_conversation(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "crew.md"
    run(home, "export", "--chat", "Climbing crew", "--format", "md", "-o", str(out))
    text = out.read_text(encoding="utf-8")
    crew = stats(home, "Climbing crew")
    assert text.startswith("# Messages with Climbing crew\n")
    said = re.findall(r"^\*\*(.+?)\*\* (\d\d:\d\d) — ", text, re.M)
    assert len(said) == crew["sent"] + crew["received"]
    assert {who for who, _t in said} >= {"me", "Sam Rivera"}
    assert re.search(r"^### \w+day \d{1,2} \w+ 20\d\d$", text, re.M)  # a heading per day
    assert re.search(r"^  ↳ .+", text, re.M)  # reactions under the message


def test_export_of_nothing_and_of_one_message(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "none.md"
    run(home, "export", "--since", "2031-01-01", "--format", "md", "-o", str(out))
    assert not out.exists()  # nothing to export: said, and no file (tests/.../test_export_unix)
    one = tmp_path / "one.jsonl"
    first = stats(home, "Sam")["first"][:10]
    run(home, "export", "--person", "Sam", "--since", first, "--until", first, "-o", str(one))
    day = stats(home, "Sam", "--since", first, "--until", first)
    assert len(one.read_text().splitlines()) == day["sent"] + day["received"] > 0
