"""Which of our own modules two start-up paths load: `casper --help` and the thin
`search --json` against a running service (docs/architecture.md, "Imports inside functions").

An import moved from inside a function to the top of a module on one of these paths adds its
target to the path: this pins the sets, so such a move fails here instead of slowing every start
unnoticed. A module that belongs on a path now (a new command module on `--help`) is added to
the set below; `python -m bench.startup_imports` lists what every path loads and why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service_helpers import REPO, Services

OURS = ("casper", "ingest", "eval")
CHILD = """
import json, sys
sys.argv = ["casper", *json.loads(sys.argv[1])]
code = 0
try:
    from casper.__main__ import main
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
sys.stdout.flush()
ours = sorted(m for m in sys.modules if m.split(".")[0] in OURS)
print("LOADED=" + json.dumps(ours), file=sys.stderr)
sys.exit(code)
""".replace("OURS", repr(OURS))

COMMANDS = ["ask", "chats", "contacts", "demo", "doctor", "evaluate", "export", "indexing",
            "mcp", "pull", "review", "search", "serve", "show", "stats"]  # fmt: skip
HELP = {
    "casper", "casper.__main__", "casper.cli", "casper.cli.base", "casper.cli.guard",
    "casper.cli.thin", "casper.cli.usage", "casper.config", "casper.dates", "casper.dates.zones",
    "casper.datadir",  # config refuses a data dir of another user with its check (stdlib only)
    "casper.errors", "casper.setting_values", "casper.vocab",
    *(f"casper.cli.{c}" for c in COMMANDS),
}  # fmt: skip
THIN_SEARCH_JSON = {
    "casper", "casper.__main__", "casper.app", "casper.app.requests", "casper.cli",
    "casper.cli.guard", "casper.cli.reads", "casper.cli.thin", "casper.cli.transport",
    "casper.config", "casper.datadir", "casper.errors", "casper.events", "casper.service",
    "casper.service.client", "casper.service.protocol", "casper.setting_values",
    "casper.telemetry", "casper.vocab",
}  # fmt: skip


def _loaded(home: Path, args: list[str]) -> tuple[int, set[str]]:
    """(exit code, our modules in sys.modules when it ended) of one `casper` process."""
    env = {**os.environ, "CASPER_SERVICE": "1", "CASPER_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("CASPER_THIN", None)  # as shipped: the thin path on
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)],
        capture_output=True, text=True, env=env, timeout=120, check=False, cwd=REPO,
    )  # fmt: skip
    _, _, loaded = proc.stderr.rpartition("LOADED=")
    return proc.returncode, set(json.loads(loaded))


def test_help_loads_the_command_modules_and_nothing_of_the_work(tmp_path: Path) -> None:
    code, loaded = _loaded(tmp_path, ["--help"])
    assert code == 0
    assert loaded - HELP == set(), "new on `casper --help`: an import moved to a module's top?"
    assert HELP - loaded == set(), "no longer on `casper --help`: update HELP"


@pytest.mark.slow
def test_the_thin_search_json_loads_only_the_client(home: Path, services: Services) -> None:
    services.start(home)
    code, loaded = _loaded(home, ["search", "dinner", "--json"])
    assert code == 0
    assert loaded - THIN_SEARCH_JSON == set(), "new on the thin path: an import moved to the top?"
    assert THIN_SEARCH_JSON - loaded == set(), "no longer on the thin path: update the set"
