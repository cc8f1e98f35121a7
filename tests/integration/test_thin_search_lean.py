"""A warm `casper search` sends its request before it loads anything a search does not need to
send it: the settings, the request check, the logging set-up and what prints the answer load
while the service works on it, and the answer is the full CLI's, byte for byte
(test_thin_path.py). The order is read from the interpreter's own audit events (each import,
the socket's connect)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from casper.app.requests import SearchRequest, ShowRequest, StatsRequest, parse_as, wire
from casper.cli import thin
from tests.service_helpers import REPO, Services

CHILD = """
import json, sys
order = []
def hook(event, args):
    if event == "import":
        order.append(args[0])
    elif event == "socket.connect":
        order.append("<connect>")
sys.addaudithook(hook)
sys.argv = ["casper", *json.loads(sys.argv[1])]
code = 0
try:
    from casper.__main__ import main
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
sys.stdout.flush()
print("ORDER=" + json.dumps(order), file=sys.stderr)
sys.exit(code)
"""
AFTER_SENDING = ("casper.config", "casper.app.requests", "dataclasses", "inspect", "logging",
                 "tomllib", "rich", "typer")  # fmt: skip


@pytest.mark.slow
def test_a_warm_search_is_sent_before_the_settings_and_the_printing_load(
    home: Path, services: Services
) -> None:
    services.start(home)
    env = {**os.environ, "CASPER_SERVICE": "1", "CASPER_HOME": str(home), "PYTHONPATH": str(REPO)}
    for args in (["search", "dinner", "--json"], ["search", "dinner plans", "-k", "3"]):
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                              text=True, env=env, timeout=120, check=False, cwd=REPO)  # fmt: skip
        err, _, raw = proc.stderr.rpartition("ORDER=")
        assert proc.returncode == 0 and proc.stdout, err
        order = json.loads(raw)
        sent = order.index("<connect>")
        early = [m for m in order[:sent] if any(m == a or m.startswith(f"{a}.") for a in
                                                 AFTER_SENDING)]  # fmt: skip
        assert not early, early
        assert order.count("<connect>") == 1, "the request sent first was the one answered"


@pytest.mark.parametrize(
    "argv",
    [["search", "dinner"], ["search", " dinner plans ", "-k", "3", "--mode", "bm25",
      "--no-rerank", "--literal", "--person", "Priya", "--since", "2023-01-01"],
     ["show", "42"], ["show", "#42", "--before", "2", "--after", "0"],
     ["stats", "Priya", "--until", "2024-01-01"], ["contacts"]],
)  # fmt: skip
def test_the_request_sent_early_is_the_one_the_command_checks(argv: list[str]) -> None:
    parsed = thin.parse(argv)
    assert parsed is not None
    name, found = parsed
    kinds = {"search": SearchRequest, "show": ShowRequest, "stats": StatsRequest}
    if name == "contacts":
        assert thin.request_args(name, found) == {}
        return
    checked = parse_as(kinds[name], name, thin.request_args(name, found))  # type: ignore[type-var]
    assert wire(checked) == (name, thin.request_args(name, found))
