"""lancedb imported with the REST namespace client's API classes deferred: local tables work,
and the client package still loads in full the moment anything asks it for a name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

SCRIPT = """
import json, sys
from casper.index.lance_import import lancedb
db = lancedb().connect(sys.argv[1])
table = db.create_table("t", data=[{"id": "a", "text": "hello world"}])
rows = table.search().limit(5).to_arrow().num_rows
deferred = "lance_namespace_urllib3_client.api" not in sys.modules
import lance_namespace_urllib3_client as client
client.ApiClient  # a name from the package's own __init__
print(json.dumps({"rows": rows, "deferred": deferred,
                  "loaded_on_use": "lance_namespace_urllib3_client.api" in sys.modules}))
"""


def test_local_tables_work_and_the_client_loads_when_used(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "db")],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "rows": 1, "deferred": True, "loaded_on_use": True,
    }  # fmt: skip
