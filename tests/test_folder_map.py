"""The folder map in docs/architecture.md names every module, so a newcomer finds each one there.

As datasette checks that every setting is documented, this reads the modules from the tree at
test time (a module added, renamed or split shows up by itself) and requires each to be named in
its folder's row of the map's table, by its name in backticks (`freshness`) or its path
(`casper/app/freshness.py`). Package `__init__` and `__main__` files are the folder itself.
Reads files only; no casper import."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAP_DOC = REPO / "docs" / "architecture.md"
MAPPED_ROOTS = ("casper", "ingest", "eval")
SECTION = "## Layers and folder map"

_CODE = re.compile(r"`([^`]+)`")


def modules(repo: Path = REPO, roots: tuple[str, ...] = MAPPED_ROOTS) -> list[str]:
    """Every Python module under the mapped roots, as a repo-relative path."""
    found = []
    for root in roots:
        for path in sorted((repo / root).rglob("*.py")):
            if path.name.startswith("__") or "__pycache__" in path.parts:
                continue
            found.append(path.relative_to(repo).as_posix())
    return found


def map_rows(doc: str) -> dict[str, str]:
    """The folder map's rows: each folder its first cell names (in backticks, ending in `/`) →
    the whole row's text. A cell naming several folders gives each the same row."""
    start = doc.index(SECTION)
    end = doc.find("\n## ", start + len(SECTION))
    rows: dict[str, str] = {}
    for line in doc[start : end if end != -1 else None].splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        for folder in _CODE.findall(first_cell):
            if folder.endswith("/"):
                rows.setdefault(folder.rstrip("/"), line)
    return rows


def row_for(module: str, rows: dict[str, str]) -> str | None:
    """The row of the module's folder, or of its nearest mapped ancestor folder."""
    folder = module.rsplit("/", 1)[0]
    while folder:
        if folder in rows:
            return rows[folder]
        folder = folder.rpartition("/")[0]
    return None


def is_named(module: str, row: str) -> bool:
    """The row names the module: `stem`, `stem.py`, or a path ending in `/stem` or `/stem.py`."""
    stem = module.rsplit("/", 1)[1].removesuffix(".py")
    for code in _CODE.findall(row):
        for token in re.split(r"[\s,()]+", code):
            if token in (stem, f"{stem}.py") or token.endswith((f"/{stem}", f"/{stem}.py")):
                return True
    return False


def unnamed(module_paths: list[str], doc: str) -> list[str]:
    rows = map_rows(doc)
    return [m for m in module_paths if not ((row := row_for(m, rows)) and is_named(m, row))]


MODULES = modules()


def test_the_tree_has_modules_to_check() -> None:
    assert len(MODULES) > 100, MODULES  # a wrong root would make every other test vacuous


@pytest.mark.parametrize("module", MODULES)
def test_every_module_is_named_in_the_folder_map(module: str) -> None:
    missing = unnamed([module], MAP_DOC.read_text())
    assert not missing, f"name {module} in its folder's row of docs/architecture.md's folder map"


def test_a_module_missing_from_the_map_is_caught(tmp_path: Path) -> None:
    (tmp_path / "casper" / "app").mkdir(parents=True)
    for name in ("__init__.py", "runtime.py", "handlers.py", "freshness.py"):
        (tmp_path / "casper" / "app" / name).write_text("")
    (tmp_path / "casper" / "config.py").write_text("")
    doc = (
        "# Architecture\n\n## Layers and folder map\n\n| folder | job |\n|---|---|\n"
        "| `casper/` leaves: `config` | leaves |\n"
        "| `casper/app/` | the root `runtime`, `handlers` (and `casper/app/runtime.py`) |\n"
        "\n## Data flow\n\n`freshness` is named here, outside the map: it does not count.\n"
    )
    found = modules(tmp_path, ("casper",))
    assert found == ["casper/app/freshness.py", "casper/app/handlers.py", "casper/app/runtime.py",
                     "casper/config.py"]  # fmt: skip
    assert unnamed(found, doc) == ["casper/app/freshness.py"]
    named = doc.replace("`handlers` (", "`handlers`, `freshness` (")
    assert unnamed(found, named) == []
    # named only in another folder's row is not named in its own
    elsewhere = doc.replace("`config` |", "`config`, `freshness` |")
    assert unnamed(found, elsewhere) == ["casper/app/freshness.py"]
