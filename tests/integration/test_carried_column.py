"""A chat.db column declared in ingest/columns.py (with its migration, and nothing else) is read
on both paths, stored, shown by `show --json` and searched: the recipe in docs/development.md,
walked in a child interpreter (tests/carried_column.py) so the declaration is in place before
anything is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "carried_column.py"


def test_a_declared_column_is_stored_shown_and_searched(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CASPER_HOME": str(tmp_path / "home")},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    rowid = out["rowid"]
    # read by the single reader and by worker processes (their staging copy), both alike; the
    # column no chat.db has reads NULL
    assert out["workers_by_workers"] and not out["single_by_workers"]
    assert out["single_effects"] == out["workers_effects"] == [[rowid, "invisibleink", None]]
    assert out["same_rows"]
    # back from the store, and through an edit's upsert unchanged
    walked = [["walked_effect", "invisibleink"], ["walked_absent", None]]
    assert out["carried"] == out["upserted"] == walked
    # show --json: under its name when it has a value, absent when not
    assert out["show"]["walked_effect"] == "invisibleink" and "walked_absent" not in out["show"]
    # searched: its words on the message's line, the same from the store as from the records
    (line,) = out["search_lines"]
    assert line.endswith(" [sent with invisibleink]")
    assert out["search_paths_agree"]
