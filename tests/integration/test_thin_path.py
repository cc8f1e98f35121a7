"""The thin path of the read commands (casper/cli/thin.py): the same bytes as the full CLI, none
of typer, and the full CLI for anything it does not understand.

The byte-for-byte check runs each invocation of a table twice as a whole `casper` process (the
console entry point, casper/__main__.py) against a running test service: once as shipped and
once with the thin path switched off (CASPER_THIN=0, the typer app alone), and compares exit
code, stdout and stderr.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from casper.cli import reads, thin
from tests.service_helpers import REPO, Services

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
seen = [m for m in ("typer", "click", "rich", "casper.cli.base", "numpy") if m in sys.modules]
print("LOADED=" + json.dumps(seen), file=sys.stderr)
sys.exit(code)
"""


def _casper(home: Path, args: list[str], *, thin_path: bool) -> tuple[int, str, str, list[str]]:
    """(exit code, stdout, stderr, modules loaded) of one `casper` process."""
    env = {**os.environ, "CASPER_SERVICE": "1", "COLUMNS": "100", "CASPER_HOME": str(home)}
    env["PYTHONPATH"] = str(REPO)
    env["CASPER_THIN"] = "1" if thin_path else "0"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)],
        capture_output=True, text=True, env=env, timeout=120, check=False, cwd=REPO,
    )  # fmt: skip
    err, _, loaded = proc.stderr.rpartition("LOADED=")
    return proc.returncode, proc.stdout, err, json.loads(loaded)


@pytest.mark.slow
def test_the_thin_path_prints_what_the_full_cli_prints(home: Path, services: Services) -> None:
    services.start(home)
    _, out, _, _ = _casper(home, ["search", "dinner", "--json"], thin_path=False)
    rowid = str(json.loads(out)["hits"][0]["messages"][0]["rowid"])
    table = [
        ["search", "dinner"],
        ["search", "dinner", "--json"],
        ["search", "dinner plans", "--person", "Priya", "-k", "3"],
        ["--home", str(home), "search", "dentist", "--mode", "bm25", "--no-rerank", "--json"],
        ["search", "--literal", "dinner", "--since=2023-01-01", "--until", "2024-12-31"],
        ["search", "zzzqqq nothing", "--since", "2019-01-01", "--until", "2019-02-01"],
        ["search", "dinner", "-k", "0"],  # refused by the request check: error + hint, exit 1
        ["show", rowid],
        ["show", rowid, "--before", "2", "--after", "1", "--json"],
        ["show", "99999999"],
        ["stats", "Priya"],
        ["stats", "Priya", "--json", "--since", "2023-01-01"],
        ["stats", "Nobody Atall"],
        ["contacts"],
        ["contacts", "--json"],
        ["chats"],
        ["chats", "--json"],
    ]
    for args in table:
        code, out, err, loaded = _casper(home, args, thin_path=True)
        full = _casper(home, args, thin_path=False)
        assert (code, out, err) == full[:3], args
        assert "typer" in full[3] and "casper.cli.base" in full[3], "the full CLI ran"
        assert not {"typer", "click", "casper.cli.base"} & set(loaded), (args, loaded)
        if args[0] != "chats":  # chats reads the store here, which needs numpy either way
            assert "numpy" not in loaded, (args, loaded)
        if "--json" in args and not err:
            assert "rich" not in loaded, (args, loaded)  # nothing to draw, nothing drawn with
    assert code == 0 and out.strip().startswith("["), "the last call (chats --json) answered"


@pytest.mark.slow
def test_what_the_thin_path_does_not_understand_goes_to_typer(
    home: Path, services: Services
) -> None:
    services.start(home)
    for args in (
        ["search", "--help"],
        ["search", "dinner", "--no-such-option"],
        ["show", "1", "2"],
    ):
        code, out, err, loaded = _casper(home, args, thin_path=True)
        assert "typer" in loaded, args
        assert (code, out, err) == _casper(home, args, thin_path=False)[:3], args


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--help"], ["-h"], ["--version"], ["search", "q", "-v"], ["search"],
        ["search", "q", "extra"], ["search", "q", "--no-such"], ["search", "q", "-k"],
        ["search", "q", "-k", "x"], ["search", "q", "-k=5"], ["search", "q", "-k5"],
        ["search", "q", "--mode", "fuzzy"], ["search", "q", "--json=1"],
        ["search", "--", "-q"], ["search", "q", "--person", "-x"], ["stats", "me", "--png", "f"],
        ["chats", "--no-service"], ["--home"], ["--home", "h"], ["index"], [],
        ["--verbose", "search", "q"], ["search", "q", "--home", ""],
    ],
)  # fmt: skip
def test_the_parser_leaves_anything_unusual_to_typer(argv: list[str]) -> None:
    assert thin.parse(argv) is None


def test_the_parser_reads_what_typer_reads() -> None:
    assert thin.parse(["--home", "h", "search", "a b", "-k", "3", "--json", "--mode=bm25"]) == (
        "search", {"home": Path("h"), "query": "a b", "k": 3, "json": True, "mode": "bm25"},
    )  # fmt: skip
    assert thin.parse(["show", "42", "--before", "1", "--home=x", "--before", "2"]) == (
        "show", {"ref": "42", "before": 2, "home": Path("x")},
    )  # fmt: skip
    assert thin.parse(["contacts"]) == ("contacts", {})


def test_the_thin_table_is_a_faithful_subset_of_the_typer_commands() -> None:
    """Every option the thin path reads is the typer command's: same name, same kind, same
    choices; its body's defaults are typer's defaults. An option typer has and the table lacks
    (a newer one) only sends that invocation to typer."""
    import typer.main
    from typer._click import types as click_types

    from casper.cli import app

    group = typer.main.get_command(app)
    for name, command in thin.COMMANDS.items():
        click_cmd = group.commands[name]  # type: ignore[attr-defined]
        params = {p.name: p for p in click_cmd.params}
        arguments = tuple(p.name for p in click_cmd.params if p.param_type_name == "argument")
        assert command.arguments == arguments, name
        body = inspect.signature(reads.BODIES[name]).parameters
        for flag, (key, kind) in command.options.items():
            param = params[key]
            assert flag in param.opts, (name, flag)
            if kind == thin.FLAG:
                assert param.is_flag and not param.secondary_opts, (name, flag)
            elif isinstance(kind, tuple):
                assert tuple(param.type.choices) == kind, (name, flag)
            elif kind == thin.NUMBER:
                assert isinstance(param.type, click_types.IntParamType), (name, flag)
            elif kind == thin.PATH:
                assert type(param.type).__name__ == "TyperPath", (name, flag)
                assert not param.type.exists and param.type.readable, (name, flag)
            else:
                assert param.type is click_types.STRING, (name, flag)
            assert body[key].default == param.default, (name, key)
            assert param.multiple is False and param.nargs == 1, (name, flag)
        # `sent`: the thin path's request already on its way (thin.send_early), not an option
        assert set(body) - {"verbose", "sent"} <= set(params), name
