"""`casper stats` pictures on the demo and on real chat.db fixtures: every series agrees with the
`stats` figures and with counts read straight from chat.db; people, chats and the owner; the
terminal view and `--png` draw those numbers."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_home, use_fake_search_models
from tests.paths import CHATDB_FIXTURES, shared_fixture

runner = CliRunner()


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo indexed once for this module (fake search models)."""
    place = tmp_path_factory.mktemp("stats_pictures") / "home"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(place, demo_corpus)
    return place


def run(home: Path, *args: str) -> str:
    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result.stdout


def doc(home: Path, *args: str) -> dict:
    return json.loads(run(home, "stats", *args, "--json"))


LEGACY_REACTION = re.compile(r"^(Loved|Liked|Disliked|Laughed at|Emphasized|Questioned) “")


def chat_db_counts(chat_db: Path) -> dict[int, Counter]:
    """Per chat.db chat: messages from me and from others, read with plain SQL, not through
    Casper. Left out, as CLI.md defines a message: tapbacks, system rows, messages unsent
    whole, and the `Loved “…”` texts old SMS phones send as reactions."""
    conn = sqlite3.connect(f"file:{chat_db}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT j.chat_id, m.is_from_me, m.text FROM message m "
        "JOIN chat_message_join j ON j.message_id = m.ROWID "
        "WHERE m.associated_message_type = 0 AND m.item_type = 0 "
        "AND NOT (m.date_retracted > 0 AND coalesce(m.text, '') = '')"
    ).fetchall()
    conn.close()
    out: dict[int, Counter] = {}
    for chat, mine, text in rows:
        if text and LEGACY_REACTION.match(text):
            continue
        out.setdefault(chat, Counter())["sent" if mine else "received"] += 1
    return out


def assert_series_sum_to_figures(d: dict) -> None:
    s = d["series"]
    assert sum(p["sent"] for p in s["over_time"]) == d["sent"]
    assert sum(p["received"] for p in s["over_time"]) == d["received"]
    assert sum(map(sum, s["heatmap"])) == d["sent"] + d["received"]
    assert len(s["heatmap"]) == 7 and all(len(r) == 24 for r in s["heatmap"])
    assert s["starters"]["me"] == d["initiations"]["me"]
    assert s["starters"]["them"] == d["initiations"]["them"]
    assert s["replies"]["median_s"] == d["median_reply_s"]
    assert s["streaks"]["longest"]["days"] <= d["active_days"]
    if s["period"] == "month":
        drawn = {p["period"]: p["sent"] + p["received"] for p in s["over_time"]}
        assert {k: v for k, v in drawn.items() if v} == d["by_month"]
    hours = Counter({h: sum(day[h] for day in s["heatmap"]) for h in range(24)})
    for hour, n in d["busiest_hours"]:
        assert hours[hour] == n


def test_a_persons_series_agree_with_their_stats(home: Path, demo_corpus: DemoCorpus) -> None:
    d = doc(home, "Sam")
    expected = demo_corpus.facts["people"]["Sam Rivera"]
    assert (d["sent"], d["received"]) == (expected["sent"], expected["received"])
    assert d["scope"]["kind"] == "person" and d["person"]["name"] == "Sam Rivera"
    assert d["series"]["period"] == "month"
    assert_series_sum_to_figures(d)
    ranged = doc(home, "Sam", "--since", "2023-01-01", "--until", "2023-03-31", "--by", "week")
    assert ranged["series"]["period"] == "week"
    # the bars start at --since: 2023-01-01 is a Sunday, in ISO week 2022-W52
    assert ranged["series"]["over_time"][0]["period"] == "2022-W52"
    assert_series_sum_to_figures(ranged)


def test_chats_and_the_owner_match_chat_db(home: Path, demo_corpus: DemoCorpus) -> None:
    counts = chat_db_counts(demo_corpus.chat_db)
    for chat_id, want in counts.items():
        d = doc(home, "--chat", str(chat_id))
        assert (d["sent"], d["received"]) == (want["sent"], want["received"]), chat_id
        assert d["scope"] == {**d["scope"], "kind": "chat", "id": str(chat_id)}
        assert_series_sum_to_figures(d)
    crew = doc(home, "Climbing crew")
    assert crew["scope"]["kind"] == "chat" and crew["scope"]["members"] >= 2
    assert "person" not in crew
    by_id = doc(home, "--chat", crew["scope"]["id"])
    assert (crew["sent"], crew["received"]) == (by_id["sent"], by_id["received"])
    starters = dict(crew["series"]["starters"]["by_sender"])
    assert sum(starters.values()) == crew["initiations"]["me"] + crew["initiations"]["them"]
    assert all(pid in crew["names"] for pid in starters)
    me = doc(home, "me")
    assert me == doc(home)  # no argument: the owner overall too
    assert me["sent"] == sum(c["sent"] for c in counts.values())
    assert me["received"] == sum(c["received"] for c in counts.values())
    assert_series_sum_to_figures(me)


def test_terminal_view_draws_the_numbers(home: Path) -> None:
    d = doc(home, "Sam")
    out = run(home, "stats", "Sam")
    assert "messages by month" in out and "hour of day × weekday" in out
    for name, row in zip(("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"), d["series"]["heatmap"],
                         strict=True):  # fmt: skip
        line = next(x for x in out.splitlines() if x.strip().startswith(name))
        assert line.split()[-1] == str(sum(row))
    assert f"longest {d['series']['streaks']['longest']['days']} day" in out
    assert f"me {d['initiations']['me']} · them {d['initiations']['them']}" in out
    empty = run(home, "stats", "Climbing crew", "--since", "2031-01-01")
    assert "no messages in this range" in empty


def test_person_and_chat_together_is_refused(home: Path) -> None:
    result = runner.invoke(app, ["stats", "Sam", "--chat", "7", "--home", str(home)])
    assert result.exit_code == 1 and "not both" in result.output
    missing = runner.invoke(app, ["stats", "Nobody at all", "--home", str(home)])
    assert missing.exit_code == 1 and "no contact or group chat" in missing.output


@pytest.mark.slow  # matplotlib builds its font list in the new home: ~5 s
def test_png_is_a_picture_written_privately(home: Path, tmp_path: Path) -> None:
    from PIL import Image

    out = tmp_path / "pictures" / "sam.png"
    out.parent.mkdir()  # a folder that is not there is an error (tests/.../test_export_unix.py)
    run(home, "stats", "Sam", "--png", str(out))
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size[0] > 800 and image.size[1] > 600
        # the neutral card, not pure white or black
        corner = image.convert("RGB").getpixel((2, 2))
        assert all(200 < c < 250 for c in corner)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert os.environ.get("MPLCONFIGDIR", "").startswith(str(home))
    cached = [p for p in (home / "matplotlib").rglob("*") if p.is_file()]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in cached)
    empty = tmp_path / "empty.png"
    run(home, "stats", "me", "--since", "2031-01-01", "--png", str(empty))
    assert empty.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_title_names_who_when_and_the_zone(home: Path) -> None:
    from casper.cli.charts import footer, title_of

    d = doc(home, "Sam", "--since", "2023-01-01", "--until", "2023-06-30")
    assert title_of(d) == f"Sam Rivera · 2023-01-01 → 2023-06-30 · {d['zone']}"  # type: ignore[arg-type]
    streak, gaps = d["series"]["streaks"]["longest"]["days"], d["series"]["gaps"]["count"]
    assert f"longest streak {streak} days" in footer(d)  # type: ignore[arg-type]
    assert f"days: {gaps} (" in footer(d)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["imessagedb/chat.db", "imessage-exporter/db/test.db"])
def test_real_chat_dbs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Apple's own files: the owner's figures and a chat's equal plain SQL counts."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "chat.db").write_bytes(shared_fixture(CHATDB_FIXTURES / name).read_bytes())
    use_fake_search_models(monkeypatch)
    place = tmp_path / "home"
    index_home(place, source)
    me = doc(place, "me")
    counts = chat_db_counts(source / "chat.db")
    conn = sqlite3.connect(f"file:{source / 'chat.db'}?mode=ro", uri=True)
    orphans = conn.execute(  # messages in no chat: Casper's chat 0
        "SELECT sum(is_from_me), sum(1 - is_from_me) FROM message m WHERE NOT EXISTS "
        "(SELECT 1 FROM chat_message_join j WHERE j.message_id = m.ROWID) "
        "AND associated_message_type = 0 AND item_type = 0"
    ).fetchone()
    conn.close()
    mine = sum(c["sent"] for c in counts.values()) + (orphans[0] or 0)
    others = sum(c["received"] for c in counts.values()) + (orphans[1] or 0)
    assert (me["sent"], me["received"]) == (mine, others)
    assert_series_sum_to_figures(me)
    for chat_id, want in counts.items():
        d = doc(place, "--chat", str(chat_id))
        assert (d["sent"], d["received"]) == (want["sent"], want["received"])
