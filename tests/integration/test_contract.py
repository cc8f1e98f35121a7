"""The behaviour contract: every `--help` text and every machine-readable output, byte for byte.

A refactor that changes no behaviour leaves every file in tests/golden/contract/ as it is:
- help/: `casper --help` and `--help` of every command, enumerated from the typer app itself
  (a new command is covered, and asks for its golden, without an edit here);
- json/: the `--json` documents of every command that has one, several invocations each
  (filters, modes, error cases), on the demo corpus indexed once with the fake models (hash
  embedder, word-overlap reranker, no language model), in this process; `export`'s files
  (JSON Lines, CSV, Markdown); `casper mcp` as a client reads it on the wire (its tool list
  and a call of each tool, errors included). Each file holds the command line, the exit
  code, stdout and stderr.

Masked, by key, whatever changes from run to run (MASKED: durations, clock times, pids, run
file names); temp paths read as $HOME, $DEMO, $OUT. The rest is as printed: a document is also
checked to be exactly `json.dumps(doc, ensure_ascii=False, indent=2)`, so masking cannot hide
a change of format. The home fixes its time zone (America/Los_Angeles) and the model cache
is empty, so `doctor` says the same on every machine.

Not here, because it is tested already: that the thin path (tests/integration/
test_thin_path.py) and the service (tests/integration/test_service.py) print the same bytes
as the typer app in this process. The thin path serves no `--help` (it hands help to typer).

Regenerate after an intended change: `CASPER_UPDATE_GOLDEN=1 pytest
tests/integration/test_contract.py`, then review the diff: a diff here is a behaviour change.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import select
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.main import get_command
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.first_hour import GOLDEN, use_demo_fakes
from tests.helpers import REPO, index_args

CONTRACT = GOLDEN / "contract"
WIDTH = "100"  # COLUMNS for every run: help and tables wrap the same everywhere
runner = CliRunner()

# Values replaced by "<masked>" wherever these keys appear; a dict or list under one keeps its
# keys and shape, only its numbers and strings are masked (a renamed stage still shows). Each
# changes from run to run of the same code on the same data:
MASKED = {
    "elapsed_s",  # wall-clock seconds (index, ask, eval)
    "cpu_s",  # CPU seconds (index)
    "timings",  # seconds per stage (index)
    "embed_chunks_per_s",  # a rate (index)
    "latency_ms",  # p50/p95 of the eval's searches
    "created",  # when an eval ran (UTC clock time)
}
# the doctor checks whose detail describes this machine, not Casper ("3.11.7 on Linux x86_64"):
# their `detail` is masked
MACHINE_CHECKS = {"python"}
# eval names its run files by the clock (runs/20250101-120000.json): that stamp only
RUN_STAMP = re.compile(r"(?<=/runs/)\d{8}-\d{6}(?=\.)")


# -- help ---------------------------------------------------------------------------------------


def command_paths() -> list[tuple[str, ...]]:
    """() for `casper` and the path of every command and subcommand the app has."""
    found: list[tuple[str, ...]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, (*path, name))

    walk(get_command(app), ())
    return found


def _help(path: tuple[str, ...]) -> Result:
    return runner.invoke(app, [*path, "--help"], prog_name="casper", env=_env())


def _env() -> dict[str, str | None]:
    # a fixed width; nothing that would make rich colour or size the text otherwise
    return {"COLUMNS": WIDTH, "LINES": "50", "FORCE_COLOR": None, "NO_COLOR": None,
            "TTY_COMPATIBLE": None, "TTY_INTERACTIVE": None}  # fmt: skip


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "casper")
def test_help_text(path: tuple[str, ...]) -> None:
    result = _help(path)
    line = " ".join(("casper", *path, "--help"))
    assert result.exit_code == 0, f"{line}: {result.output}"
    check(
        f"help/{'-'.join(path) or 'casper'}",
        line,
        _record(line, result.exit_code, result.stdout, result.stderr),
    )


def test_dash_h_is_the_same_help() -> None:
    for path in command_paths():
        assert runner.invoke(app, [*path, "-h"], prog_name="casper", env=_env()).stdout == (
            _help(path).stdout
        ), path


def test_help_in_its_own_process_is_the_same(tmp_path: Path) -> None:
    """What `casper --help` prints as a program (casper/__main__.py, which offers its arguments
    to the thin path first: `search` is one of its commands) is what the runs above record."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": WIDTH, "LINES": "50"}
    for var in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(var, None)
    for path in [(), ("search",)]:
        proc = subprocess.run([sys.executable, "-m", "casper", *path, "--help"],
                              capture_output=True, text=True, env=env, timeout=120, check=False,
                              cwd=tmp_path)  # fmt: skip
        assert (proc.returncode, proc.stdout) == (0, _help(path).stdout), path


# -- --json documents on the demo ----------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One invocation: a golden name and the arguments after `casper` (`--home $HOME` is added
    unless `home` is False; $DEMO and $OUT are the temp paths)."""

    name: str
    args: tuple[str, ...]
    home: bool = True
    stderr: bool = True  # False: stderr is not compared (only eval: timings in a table)


SAM_Q1 = ("--since", "2024-01-01", "--until", "2024-03-31")
RUNS = [
    Run("index-again", ("index", "--json")),  # the first run is the fixture's: index_first
    Run("contacts", ("contacts", "--json")),
    Run("chats", ("chats", "--json")),
    Run("search", ("search", "dentist", "--json")),
    Run("search-k3-person", ("search", "dinner", "--person", "Priya", "-k", "3", "--json")),
    Run("search-since", ("search", "dinner with Priya", "--since", "2024-01-01", "--json")),
    Run("search-range", ("search", "thanksgiving", "--since", "2023-10-01", "--until",
                         "2023-12-31", "--json")),  # fmt: skip
    Run("search-chat", ("search", "climbing", "--chat", "Climbing crew", "--json")),
    Run("search-bm25", ("search", "寿司", "--mode", "bm25", "--json")),
    Run("search-vector", ("search", "wifi password", "--mode", "vector", "-k", "4", "--json")),
    Run("search-rank-bm25", ("search", "wifi password", "--mode", "bm25", "--lexical",
                             "rank-bm25", "--json")),  # fmt: skip
    Run("search-no-rerank", ("search", "wifi password", "--no-rerank", "--json")),
    Run("search-literal", ("search", "wifi password climbing gym", "--literal", "--json")),
    Run("search-question", ("search", "when is my dentist appointment?", "--json")),
    Run("search-nothing", ("search", "zzqx flurbish", "--json")),
    Run("error-search-ambiguous-chat", ("search", "x", "--chat", "a", "--json")),
    Run("error-search-bad-date", ("search", "x", "--since", "not a date at all", "--json")),
    Run("search-person-and-chat", ("search", "x", "--person", "Sam", "--chat", "Climbing crew",
                                   "--json")),  # fmt: skip
    Run("ask", ("ask", "--no-llm", "when did Sam and I plan Thanksgiving?", "--json")),
    Run("ask-stats", ("ask", "--no-llm", "who do I text the most?", "--json")),
    Run("ask-person-since", ("ask", "--no-llm", "where did we eat?", "--person", "Priya",
                             "--since", "2024-01-01", "--json")),  # fmt: skip
    Run("ask-chat", ("ask", "--no-llm", "which gym?", "--chat", "Climbing crew", "--json")),
    Run("stats-person", ("stats", "Priya", "--json")),
    Run("stats-person-range", ("stats", "Sam", *SAM_Q1, "--json")),
    Run("stats-group", ("stats", "Climbing crew", "--by", "week", "--json")),
    Run("stats-chat-option", ("stats", "--chat", "Climbing crew", "--by", "month", "--json")),
    Run("stats-me", ("stats", "me", "--since", "2024-01-01", "--json")),
    Run("stats-owner", ("stats", "--json")),
    Run("error-stats-nobody", ("stats", "Nobody Atall", "--json")),
    Run("show", ("show", "1481", "--json")),
    Run("show-context", ("show", "1481", "--before", "2", "--after", "2", "--json")),
    Run("error-show-missing", ("show", "99999999", "--json")),
    Run("review", ("review", "2023", "--json")),
    Run("review-share", ("review", "2024", "--share", "--json")),
    Run("doctor", ("doctor", "--json")),
    Run("serve-status", ("serve", "--status", "--json")),
    # a gold file scores the current index; its stderr is progress and a table of latencies
    Run("eval-demo-gold", ("eval", "--dataset", "$DEMO/gold.jsonl", "--mode", "bm25", "-k", "5",
                           "-k", "10", "--out", "$OUT/runs", "--json"), stderr=False),
    Run("error-eval-dataset", ("eval", "--dataset", "nope", "--json")),
]  # fmt: skip
EXPORTS = [
    Run(
        "export-person-range.jsonl", ("export", "--person", "Sam", *SAM_Q1, "-o", "$OUT/sam.jsonl")
    ),  # fmt: skip
    Run(
        "export-chat.jsonl",
        ("export", "--chat", "Climbing crew", "--since", "2024-01-01", "-o", "$OUT/climbing.jsonl"),
    ),  # fmt: skip
    Run(
        "export-person.csv",
        (
            "export",
            "--person",
            "Priya",
            "--since",
            "2024-01-01",
            "-f",
            "csv",
            "-o",
            "$OUT/priya.csv",
        ),
    ),  # fmt: skip
    Run(
        "export-person.md",
        ("export", "--person", "Priya", "--since", "2024-01-01", "-f", "md", "-o", "$OUT/priya.md"),
    ),  # fmt: skip
]


@dataclass(frozen=True)
class Seen:
    line: str  # the command line as recorded (temp paths by name)
    text: str  # what the golden file holds


@pytest.fixture(scope="module")
def place(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """$HOME (the data dir: America/Los_Angeles), $DEMO (the corpus), $OUT (files written),
    $CACHE (an empty model cache), $USER (the user's home directory)."""
    base = tmp_path_factory.mktemp("contract")
    home = base / "home"
    home.mkdir()
    (home / "config.toml").write_text('timezone = "America/Los_Angeles"\n')
    (base / "out").mkdir()
    (base / "cache").mkdir()
    (base / "user").mkdir()
    return {"$HOME": home, "$DEMO": demo_corpus.chat_db.parent, "$OUT": base / "out",
            "$CACHE": base / "cache", "$USER": base / "user"}  # fmt: skip


@pytest.fixture(scope="module")
def seen(place: dict[str, Path], demo_corpus: DemoCorpus) -> dict[str, Seen]:
    """Every run of RUNS and EXPORTS, in order, on one home; the index run first."""
    found: dict[str, Seen] = {}
    with pytest.MonkeyPatch.context() as mp:
        use_demo_fakes(mp)
        # module-wide, outside the per-test isolation of tests/conftest.py: its own HOME, and
        # no model cached, so doctor says the same on every machine
        mp.setenv("HOME", str(place["$USER"]))
        mp.setenv("CASPER_CACHE", str(place["$CACHE"]))
        first = index_args(place["$HOME"], demo_corpus, "--json")
        found["index-first"] = _run(place, Run("index-first", tuple(first), home=False))
        for run in RUNS:
            found[run.name] = _run(place, run)
        for run in EXPORTS:
            found[run.name] = _export(place, run)
    return found


def _run(place: dict[str, Path], run: Run) -> Seen:
    args = [_expand(a, place) for a in run.args]
    if run.home:
        args += ["--home", str(place["$HOME"])]
    result = runner.invoke(app, args, env=_env())
    line = _named(" ".join(["casper", *(_quoted(a) for a in args)]), place)
    out = _named(result.stdout, place)
    if out:
        doc = json.loads(out)
        printed = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
        assert out == printed, f"{line}: not one JSON document as print_json writes it"
        out = json.dumps(masked(doc), ensure_ascii=False, indent=2) + "\n"
    err = _named(result.stderr, place) if run.stderr else "(not compared)\n"
    return Seen(line, _record(line, result.exit_code, out, err))


def _export(place: dict[str, Path], run: Run) -> Seen:
    seen = _run(place, run)
    path = Path(_expand(run.args[run.args.index("-o") + 1], place))
    return Seen(seen.line, seen.text + "--- file\n" + path.read_text(encoding="utf-8"))


def _expand(arg: str, place: dict[str, Path]) -> str:
    for name, path in place.items():
        arg = arg.replace(name, str(path))
    return arg


def _named(text: str, place: dict[str, Path]) -> str:
    for name, path in sorted(place.items(), key=lambda p: -len(str(p[1]))):
        text = text.replace(str(path), name)
    return text


def _quoted(arg: str) -> str:
    return f'"{arg}"' if not arg or any(c in arg for c in " ?'") else arg


def masked(doc: Any, hide: bool = False) -> Any:
    """`doc` with every value under a MASKED key replaced by "<masked>" (keys kept)."""
    if isinstance(doc, dict):
        machine = doc.get("name") in MACHINE_CHECKS and "status" in doc
        return {k: masked(v, hide or k in MASKED or (machine and k == "detail"))
                for k, v in doc.items()}  # fmt: skip
    if isinstance(doc, list):
        return [masked(v, hide) for v in doc]
    if isinstance(doc, str):
        return "<masked>" if hide else RUN_STAMP.sub("<stamp>", doc)
    return "<masked>" if hide and doc is not None else doc


def _record(line: str, code: int, out: str, err: str) -> str:
    return f"$ {line}\nexit {code}\n--- stdout\n{out}--- stderr\n{err}"


ALL_RUNS = ["index-first", *(r.name for r in RUNS), *(r.name for r in EXPORTS)]


@pytest.mark.parametrize("name", ALL_RUNS)
def test_json_document(seen: dict[str, Seen], name: str) -> None:
    check(f"json/{name}", seen[name].line, seen[name].text)


# -- casper mcp on the wire -----------------------------------------------------------------------

TOOL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_messages", {"query": "dentist", "limit": 3}),
    (
        "search_messages",
        {
            "query": "dinner",
            "person": "Priya",
            "start_date": "2024-01-01",
            "end_date": "2024-12-31",
        },
    ),  # fmt: skip
    ("list_contacts", {"name_like": "Pri"}),
    ("list_contacts", {}),
    ("get_contact_stats", {"person": "Sam", "start_date": "2024-01-01", "end_date": "2024-03-31"}),
    ("get_conversation_context", {"message_id": "1481", "before": 2, "after": 2}),
    (
        "get_message_volume_by_period",
        {"start_date": "2023-01-01", "end_date": "2023-12-31", "period": "month", "top_n": 3},
    ),  # fmt: skip
    ("get_conversation_context", {"message_id": "99999999"}),  # a tool error
    ("search_messages", {"query": 12345}),  # arguments the schema does not allow
    ("no_such_tool", {}),  # a protocol error
]


def test_mcp_on_the_wire(seen: dict[str, Seen], place: dict[str, Path]) -> None:
    """`casper mcp --no-service` (tests/mcp_fakes.py: the real command, the fake models): the
    replies to initialize, tools/list and each call, one JSON-RPC line each, in order."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "CASPER_SERVICE": "0",
           "CASPER_CACHE": str(place["$CACHE"]), "HOME": str(place["$USER"])}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp_fakes", "--home", str(place["$HOME"]), "--no-service"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "contract", "version": "1"}}  # fmt: skip
    requests: list[dict[str, Any]] = [{"method": "initialize", "params": hello},
                                      {"method": "tools/list", "params": {}}]  # fmt: skip
    requests += [{"method": "tools/call", "params": {"name": n, "arguments": a}}
                 for n, a in TOOL_CALLS]  # fmt: skip
    lines = []
    try:
        for ident, request in enumerate(requests):
            sent = json.dumps({"jsonrpc": "2.0", "id": ident, **request}, ensure_ascii=False)
            proc.stdin.write(sent.encode() + b"\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 120)
            assert ready, f"no reply to {sent}"
            reply = json.loads(proc.stdout.readline())
            lines += [f">>> {sent}", json.dumps(masked(reply), ensure_ascii=False, indent=2)]
            if ident == 0:
                proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = _named(proc.stderr.read().decode(), place)
    line = "casper mcp --home $HOME --no-service"
    check("json/mcp", line, _record(line, proc.returncode, "\n".join(lines) + "\n", err))


# -- the golden files -----------------------------------------------------------------------------


def check(name: str, line: str, text: str) -> None:
    """`text` equals tests/golden/contract/NAME.txt; CASPER_UPDATE_GOLDEN=1 rewrites it. Trailing
    spaces are dropped (rich pads help lines to the width), as tests/first_hour.py does."""
    text = "".join(line.rstrip() + "\n" for line in text.splitlines())
    path = CONTRACT / f"{name}.txt"
    if os.environ.get("CASPER_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden {path.relative_to(REPO)}: run with CASPER_UPDATE_GOLDEN=1"
    recorded = path.read_text(encoding="utf-8")
    if text != recorded:
        diff = "".join(difflib.unified_diff(recorded.splitlines(keepends=True),
                                            text.splitlines(keepends=True),
                                            "recorded", "now", n=2))  # fmt: skip
        pytest.fail(f"`{line}` changed its output (a behaviour change; if intended, regenerate "
                    f"with CASPER_UPDATE_GOLDEN=1 and review):\n{diff}", pytrace=False)  # fmt: skip
