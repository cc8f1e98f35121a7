"""What people wrote reaches a terminal through one door, checked on the code with an AST walk:
the console `casper.cli.render.console` makes, which takes control characters and escape
sequences out of everything it prints and reads no markup unless a call asks for it. So no
other rich Console is made, a print that asks for markup fills every hole of its f-strings
through `escape`, markup is never read from a value, and the few writes that bypass the console
are the ones listed here, each with what it writes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for d in ("casper", "ingest") for p in (REPO / d).rglob("*.py"))
# (file, what is written) of every write to stdout or stderr that is not a console's print
DIRECT_WRITES = {
    ("casper/cli/guard.py", "sys.stdout.write"),  # print_json: JSON, C1 written as \u escapes
    ("casper/cli/base.py", "typer.echo"),  # --version: the version
    ("casper/cli/usage.py", "typer.echo"),  # click's own help for a bare command
    ("casper/cli/mcp.py", "print"),  # the ceiling `casper mcp` serves: Casper's words only
    ("casper/cli/thin.py", "print"),  # "Aborted!", as click says it
    ("casper/cli/repl.py", "sys.stdout.write"),  # a newline at the end of input
    ("casper/cli/progress.py", "self.stream.write"),  # PlainProgress: its text through plain()
    ("casper/app/outfile.py", "sys.stdout.buffer.write"),  # `-o -`: through plain() on a tty
}


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def _calls(path: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_only_the_factory_makes_a_console(path: Path) -> None:
    if _rel(path) == "casper/cli/render.py":
        return
    made = [c.lineno for c in _calls(path) if _name(c.func).split(".")[-1] == "Console"]
    assert not made, f"{_rel(path)}:{made}: use casper.cli.render.console"


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_markup_is_asked_for_with_every_hole_escaped(path: Path) -> None:
    wrong = []
    for call in _calls(path):
        if _name(call.func).endswith(("from_markup", "render_markup")) and not all(
            isinstance(a, ast.Constant) for a in call.args
        ):
            wrong.append(call.lineno)
        asks = any(k.arg == "markup" and getattr(k.value, "value", None) is True
                   for k in call.keywords)  # fmt: skip
        if not asks:
            continue
        for arg in call.args:
            for node in ast.walk(arg):
                if isinstance(node, ast.FormattedValue) and not (
                    isinstance(node.value, ast.Call) and _name(node.value.func) == "escape"
                ):
                    wrong.append(node.lineno)
    assert not wrong, f"{_rel(path)}:{wrong}: markup read from a value (escape it, or print Text)"


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_nothing_else_writes_to_the_terminal(path: Path) -> None:
    found = set()
    for call in _calls(path):
        name = _name(call.func)
        stream = next((k for k in call.keywords if k.arg == "file"), None)
        if name in (
            "sys.stdout.write",
            "sys.stderr.write",
            "sys.stdout.buffer.write",
            "sys.stderr.buffer.write",
            "typer.echo",
            "click.echo",
            "self.stream.write",
        ) or (
            name == "print"
            and (stream is None or _name(stream.value) in ("sys.stdout", "sys.stderr"))
        ):
            found.add((_rel(path), name))  # fmt: skip
    assert found <= DIRECT_WRITES, found - DIRECT_WRITES


def test_the_check_sees_a_console_and_a_hole() -> None:
    """The walk finds what it looks for (else the tests above pass on nothing)."""
    tree = ast.parse('c = Console()\nc.print(f"[red]{name}[/]", markup=True)\nprint(x)')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [_name(c.func) for c in calls] == ["Console", "c.print", "print"]
    holes = [n for n in ast.walk(calls[1]) if isinstance(n, ast.FormattedValue)]
    assert len(holes) == 1 and _name(holes[0].value) == "name"
