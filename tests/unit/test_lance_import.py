"""lancedb imported with the REST namespace client's API classes deferred: local tables work,
and the client package still loads in full the moment anything asks it for a name.

The patch leans on how the installed lancedb imports that client, so these tests also check it
against the installed version (the one pyproject.toml pins): lancedb still imports the package
the patch defers, the package's own `__init__` still pulls in its `.api` classes, and those are
still a large share of a plain `import lancedb` (measured with `-X importtime` inside one process,
so the machine's load cancels out). A lancedb upgrade that renames the package, drops the client
or imports its API some other way fails here instead of silently costing every cold search
~1 s again (bench: on lancedb 0.40.0 a cold `import lancedb` took 1.90 s wall / 2.00 CPU-s,
through casper.index.lance_import 1.06 s / 1.13 CPU-s, medians of 5 on the 2-core box)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement  # a dependency of lancedb itself

from casper.index.lance_import import CLIENT
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
# the share of a plain `import lancedb` that the deferred API classes must still take for the
# patch to be worth keeping (0.57 on lancedb 0.40.0: 1.06 of 1.87 s under -X importtime)
MIN_SHARE = 0.3


def _python(code: str, *args: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *flags, "-c", code, *args],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


def test_local_tables_work_and_the_client_loads_when_used(tmp_path: Path) -> None:
    out = _python(SCRIPT, str(tmp_path / "db"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "rows": 1, "deferred": True, "loaded_on_use": True,
    }  # fmt: skip


def test_the_installed_lancedb_is_the_pinned_one() -> None:
    """The checks below hold for the installed version; pyproject.toml must not let a fresh
    install pick another one that they were never run against."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    pins = [Requirement(d) for d in pyproject["project"]["dependencies"]]
    lancedb = next(r for r in pins if r.name == "lancedb")
    assert any(s.operator in ("<", "<=", "==", "~=") for s in lancedb.specifier), (
        f"lancedb needs an upper bound in pyproject.toml ({lancedb}): the import patch in "
        "casper/index/lance_import.py is checked against one version"
    )
    assert lancedb.specifier.contains(version("lancedb")), (version("lancedb"), str(lancedb))


def _cumulative_us(importtime: str) -> dict[str, int]:
    """Module → cumulative import microseconds, from `python -X importtime` output."""
    got: dict[str, int] = {}
    for line in importtime.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s+(\S+)$", line)
        if m:
            got[m[2]] = max(got.get(m[2], 0), int(m[1]))
    return got


def test_the_deferred_client_is_still_what_makes_lancedb_slow_to_import() -> None:
    """On the installed lancedb: a plain import still loads CLIENT and, through its
    `__init__`, CLIENT.api; that API package is still at least MIN_SHARE of the import (the
    time the patch saves); and through the patch CLIENT.api is not loaded at all."""
    probe = "import sys; print(sorted(m for m in sys.modules if m.startswith({!r})))"
    plain = _python("import lancedb; " + probe.format(CLIENT), flags=("-X", "importtime"))
    assert plain.returncode == 0, plain.stderr
    loaded = plain.stdout.strip().splitlines()[-1]
    assert f"'{CLIENT}'" in loaded, f"lancedb no longer imports {CLIENT}: the patch saves nothing"
    assert f"'{CLIENT}.api'" in loaded, f"{CLIENT}'s __init__ no longer imports .api"
    times = _cumulative_us(plain.stderr)
    share = times[f"{CLIENT}.api"] / times["lancedb"]
    assert share >= MIN_SHARE, f"{CLIENT}.api is only {share:.0%} of `import lancedb` now"

    patched = _python(
        "from casper.index.lance_import import lancedb; lancedb(); " + probe.format(CLIENT)
    )
    assert patched.returncode == 0, patched.stderr
    assert f"'{CLIENT}.api'" not in patched.stdout.strip().splitlines()[-1]
