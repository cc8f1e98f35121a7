"""Index runs under the machine's fallback zone: the demo history spans
several daylight-saving changes; the stats match those of the named zone and a later run has
nothing to redo."""

from __future__ import annotations

import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import casper.dates.zones as timeutil
from casper.dates.zones import local_tz
from casper.indexer.pipeline import Indexer
from casper.store.db import Store


def test_fallback_zone_stats_match_the_named_zone_and_stay_valid(
    demo_corpus,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    import tzdata
    import tzlocal

    monkeypatch.delenv("TZ", raising=False)
    monkeypatch.setattr(tzlocal, "get_localzone_name", lambda: (_ for _ in ()).throw(OSError()))
    localtime = tmp_path / "localtime"
    shutil.copy(Path(tzdata.__file__).parent / "zoneinfo/Europe/Paris", localtime)
    monkeypatch.setattr(timeutil, "LOCALTIME", localtime)

    fallback = Store.open(tmp_path / "a" / "casper.sqlite")
    Indexer(fallback, demo_corpus.chat_db, demo_corpus.contacts, local_tz()).run()
    named = Store.open(tmp_path / "b" / "casper.sqlite")
    Indexer(named, demo_corpus.chat_db, demo_corpus.contacts, ZoneInfo("Europe/Paris")).run()
    people = fallback.people()
    assert people
    for person in people:
        assert fallback.stats(person.id) == named.stats(person.id), person.name
    # a later run (the zone resolved again, whatever the season) finds nothing to recompute
    changes = fallback.conn.total_changes
    again = Indexer(fallback, demo_corpus.chat_db, demo_corpus.contacts, local_tz()).run()
    assert again.noop
    assert fallback.conn.total_changes == changes
