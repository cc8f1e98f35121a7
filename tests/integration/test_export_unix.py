"""`casper export` (and the other commands that write a file a person names: `review -o`,
`stats --png`) behave as Unix tools do: `-o -` is standard output, a folder that is not there
is an error (nothing is made), and an export with no messages says so, writes nothing and
exits 0. `--no-formula-guard` gives a spreadsheet the cells as they are."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_home, use_fake_search_models

runner = CliRunner()


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("export_unix") / "home"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(place, demo_corpus)
    return place


def invoke(home: Path, *args: str):  # noqa: ANN201 - click's Result
    return runner.invoke(app, [*args, "--home", str(home)])


def counted(home: Path, *args: str) -> int:
    result = invoke(home, "stats", *args, "--json")
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    return d["sent"] + d["received"]


def test_dash_is_standard_output(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for fmt in ("jsonl", "csv", "md"):
        result = invoke(home, "export", "--person", "Sam", "--format", fmt, "-o", "-")
        assert result.exit_code == 0, result.output
        assert not (tmp_path / "-").exists()
        if fmt == "jsonl":
            rows = [json.loads(line) for line in result.stdout.splitlines()]
            assert len(rows) == counted(home, "Sam")
        elif fmt == "csv":
            assert len(list(csv.DictReader(io.StringIO(result.stdout)))) == counted(home, "Sam")
        else:
            assert result.stdout.startswith("# Messages with Sam Rivera\n")
        assert "wrote" not in result.stdout  # what it did goes to stderr, not into the data
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_an_error_and_nothing_is_made(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    for args in (
        ["export", "--person", "Sam", "-o", str(missing / "x.jsonl")],
        ["review", "2023", "-o", str(missing / "r.html")],
        ["stats", "Sam", "--png", str(missing / "s.png")],
    ):
        result = invoke(home, *args)
        assert result.exit_code == 1, (args, result.output)
        assert "error:" in result.output and str(missing) in result.output
        assert not (tmp_path / "no").exists(), args


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "md"])
def test_an_empty_export_says_so_and_writes_nothing(home: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"none.{fmt}"
    result = invoke(home, "export", "--since", "2031-01-01", "--format", fmt, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert not out.exists()
    assert "no messages" in result.output and "nothing written" in result.output
    to_stdout = invoke(home, "export", "--since", "2031-01-01", "--format", fmt, "-o", "-")
    assert to_stdout.exit_code == 0 and to_stdout.stdout == ""
    assert "no messages" in to_stdout.output


def test_no_formula_guard_gives_the_cells_as_they_are(home: Path, tmp_path: Path) -> None:
    guarded, raw = tmp_path / "guarded.csv", tmp_path / "raw.csv"
    for out, extra in ((guarded, []), (raw, ["--no-formula-guard"])):
        result = invoke(home, "export", "--format", "csv", "-o", str(out), *extra)
        assert result.exit_code == 0, result.output
    kept = list(csv.DictReader(raw.open(encoding="utf-8")))
    shown = list(csv.DictReader(guarded.open(encoding="utf-8")))
    assert len(kept) == len(shown)
    # a contact known only by their number: a number in a spreadsheet, guarded or not
    assert any(r["sender"] == "+13125550177" for r in shown)
    assert not any(r["sender"].startswith("'") for r in shown)
    differ = [(a[k], b[k]) for a, b in zip(shown, kept, strict=True) for k in a if a[k] != b[k]]
    assert differ and all(a == "'" + b for a, b in differ)  # only the guard's apostrophe
    assert not any(v.startswith("'") and v[1:2] in "=+-@" for r in kept for v in r.values())
